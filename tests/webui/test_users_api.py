"""Users and their API tokens through the API: admins list users, change roles, deactivate, reset passwords
and revoke anybody's tokens; every user sees and revokes their own; nobody may leave the installation
without an active admin; every change is audited."""

from __future__ import annotations

import time

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
    # the token of this very call: its use is written in the background, within a second here
    deadline = time.monotonic() + 30
    while api("operator", "get", "/api/v1/users/operator/tokens").get_json()["items"][1]["last_used"] is None:
        assert time.monotonic() < deadline, "the token's use was never recorded"
        time.sleep(0.1)
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


def test_the_users_page_changes_roles_deactivates_and_resets_and_others_may_not_see_it(login, webui_engine):
    admin = login("admin")
    page = admin.get("/system/users").get_data(as_text=True)
    assert 'data-user="curator"' in page and "Deactivate" in page
    assert login("curator").get("/system/users").status_code == 403
    with webui_engine.connect() as conn:
        edition = UserRepository(conn).get("archivist").edition
    changed = admin.post("/system/users/archivist", data={"csrf_token": admin.csrf, "edition": edition,
                                                          "role": "curator"}, follow_redirects=True)
    assert "User archivist is now curator, active." in changed.get_data(as_text=True)
    stale = admin.post("/system/users/archivist", data={"csrf_token": admin.csrf, "edition": edition,
                                                        "active": "no"}, follow_redirects=True)
    assert "User archivist was not changed" in stale.get_data(as_text=True)
    deactivated = admin.post("/system/users/archivist", data={"csrf_token": admin.csrf, "edition": edition + 1,
                                                              "active": "no"}, follow_redirects=True)
    assert "deactivated: its sessions and API tokens are refused" in deactivated.get_data(as_text=True)
    differ = admin.post("/system/users/operator/password", data={
        "csrf_token": admin.csrf, "edition": 1, "new_password": "one long password", "repeated_password": "other"},
        follow_redirects=True)
    assert "differ" in differ.get_data(as_text=True)
    reset = admin.post("/system/users/operator/password", data={
        "csrf_token": admin.csrf, "edition": 1, "new_password": "one long password",
        "repeated_password": "one long password"}, follow_redirects=True)
    assert "every session of the user has ended" in reset.get_data(as_text=True)
    with webui_engine.connect() as conn:
        users = UserRepository(conn)
        assert not users.get("archivist").isactive and users.get("archivist").role.value == "curator"
        assert users.authenticate("operator", "one long password") is not None


def test_every_user_revokes_their_own_tokens_on_their_page(login, tokens, webui_engine):
    operator = login("operator")
    own = operator.get("/system/users/operator/tokens")
    assert own.status_code == 200 and "Revoke" in own.get_data(as_text=True)
    assert operator.get("/system/users/curator/tokens").status_code == 403
    with webui_engine.connect() as conn:
        (token,) = UserRepository(conn).tokens("operator")
    revoked = operator.post(f"/system/users/operator/tokens/{token.token_id}/revoke",
                            data={"csrf_token": operator.csrf}, follow_redirects=True)
    assert f"API token {token.token_id} of operator is revoked" in revoked.get_data(as_text=True)
    with webui_engine.connect() as conn:
        assert UserRepository(conn).user_for_token(tokens["operator"]) is None
    assert "API tokens" in operator.get("/").get_data(as_text=True)
