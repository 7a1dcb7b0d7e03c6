"""Users and their API tokens through the API: admins list users, change roles, deactivate, reset passwords
and revoke anybody's tokens; every user sees and revokes their own; nobody may leave the installation
without an active admin; every change is audited."""

from __future__ import annotations

import re
import time
from typing import Any

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
    assert f"API token {token.token_id} (no label) of operator is revoked" in revoked.get_data(as_text=True)
    with webui_engine.connect() as conn:
        assert UserRepository(conn).user_for_token(tokens["operator"]) is None
    assert "API tokens" in operator.get("/").get_data(as_text=True)


def test_admins_add_users_and_each_refusal_names_its_input(api):
    added = api("admin", "post", "/api/v1/users", json={"name": "karen", "role": "curator",
                                                        "password": "a long password", "fullname": "Karen Blixen"})
    assert added.status_code == 201
    assert {key: added.get_json()[key] for key in ("name", "role", "active", "fullname", "tokens")} == {
        "name": "karen", "role": "curator", "active": True, "fullname": "Karen Blixen", "tokens": 0}
    taken = api("admin", "post", "/api/v1/users", json={"name": "karen", "role": "curator",
                                                        "password": "a long password"})
    assert taken.status_code == 409 and "karen" in taken.get_json()["error"]["message"]
    emperor = api("admin", "post", "/api/v1/users", json={"name": "nero", "role": "emperor",
                                                          "password": "a long password"})
    assert emperor.status_code == 400 and "'emperor' is not one of curator" in emperor.get_json()["error"]["message"]
    short = api("admin", "post", "/api/v1/users", json={"name": "nero", "role": "curator", "password": "short"})
    assert short.status_code == 400 and "at least 8 characters" in short.get_json()["error"]["message"]
    assert api("curator", "post", "/api/v1/users", json={"name": "nero", "role": "admin",
                                                         "password": "a long password"}).status_code == 403
    names = [user["name"] for user in api("admin", "get", "/api/v1/users").get_json()["items"]]
    assert "karen" in names and "nero" not in names


def test_a_user_makes_a_labelled_token_in_a_session_and_the_secret_is_answered_once(app, api, login):
    session = login("operator")
    made = session.post("/api/v1/users/operator/tokens", json={"label": "nightly export"},
                        headers={"X-CSRF-Token": session.csrf})
    assert made.status_code == 201
    secret = made.get_json()["token"]
    assert secret.startswith("hs_") and made.get_json()["label"] == "nightly export"
    caller = app.test_client()
    assert caller.get("/api/v1/jobs", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    listed = session.get("/api/v1/users/operator/tokens").get_json()["items"]
    assert listed[0]["id"] == made.get_json()["id"] and listed[0]["label"] == "nightly export"
    assert all("token" not in item for item in listed)  # the secret is answered at its making only
    empty = session.post("/api/v1/users/operator/tokens", json={"label": " "}, headers={"X-CSRF-Token": session.csrf})
    assert empty.status_code == 400 and empty.get_json()["error"]["field"] == "label"
    # nobody makes another's token, an admin neither; and a token makes none
    admin = login("admin")
    for refused in (admin.post("/api/v1/users/operator/tokens", json={"label": "x"},
                               headers={"X-CSRF-Token": admin.csrf}),
                    api("operator", "post", "/api/v1/users/operator/tokens", json={"label": "copy"})):
        assert refused.status_code == 403, refused.get_json()
    assert "not with another token" in api("operator", "post", "/api/v1/users/operator/tokens",
                                           json={"label": "copy"}).get_json()["error"]["message"]
    assert len(session.get("/api/v1/users/operator/tokens").get_json()["items"]) == 2


def test_an_admin_adds_a_user_on_the_users_page_and_a_refused_form_comes_back_as_typed(login, app):
    admin = login("admin")
    page = admin.get("/system/users").get_data(as_text=True)
    assert 'action="/system/users"' in page and "Add a user" in page
    refused = admin.post("/system/users", data={"csrf_token": admin.csrf, "name": "operator", "fullname": "Ole Rømer",
                                                 "role": "emperor", "password": "short", "repeated_password": "short"})
    assert refused.status_code == 400
    text = refused.get_data(as_text=True)
    assert 'value="operator"' in text and 'value="Ole Rømer"' in text and 'value="short"' not in text
    for field, words in (("role", "&#39;emperor&#39; is not a role"),
                         ("password", "A password needs at least 8 characters; this one has 5.")):
        assert re.search(rf'name="{field}"[^>]*aria-invalid="true" aria-describedby="refusal-{field}"[^>]*>'
                         rf'.*?<span class="refusal" id="refusal-{field}">{re.escape(words)}', text, re.S), field
    assert re.search(r'<p class="flash error">The user was not added: [^<]*is not a role[^<]*A password needs', text), \
        "every refusal is summed up at the top"
    taken = admin.post("/system/users", data={"csrf_token": admin.csrf, "name": "operator", "role": "curator",
                                              "password": "a long password", "repeated_password": "a long password"})
    assert taken.status_code == 400
    assert re.search(r'id="refusal-name">A user named operator exists already', taken.get_data(as_text=True))
    assert '<option value="curator" selected>curator</option>' in taken.get_data(as_text=True)
    differ = admin.post("/system/users", data={"csrf_token": admin.csrf, "name": "karen", "role": "archivist",
                                               "password": "a long password", "repeated_password": "another one"})
    assert differ.status_code == 400 and 'id="refusal-repeated_password"' in differ.get_data(as_text=True)
    assert '<option value="archivist" selected>archivist</option>' in differ.get_data(as_text=True)
    # every refusal at once: a name taken beside passwords that differ
    both = admin.post("/system/users", data={"csrf_token": admin.csrf, "name": "curator", "role": "archivist",
                                             "password": "a long password", "repeated_password": "another one"})
    assert 'id="refusal-name"' in both.get_data(as_text=True)
    assert 'id="refusal-repeated_password"' in both.get_data(as_text=True)
    added = admin.post("/system/users", data={"csrf_token": admin.csrf, "name": "karen", "role": "archivist",
                                              "password": "a long password", "repeated_password": "a long password"},
                       follow_redirects=True)
    assert "User karen is added as archivist" in added.get_data(as_text=True)
    assert 'data-user="karen"' in added.get_data(as_text=True)
    karen = app.test_client()
    logged_in = karen.post("/login", data={"name": "karen", "password": "a long password",
                                           "csrf_token": csrf_of(karen)})
    assert logged_in.status_code == 302
    assert login("curator").post("/system/users", data={"name": "x"}).status_code == 403


def once_of(client: Any, name: str) -> str:
    """The one-time mark of the form that makes a token on the tokens page of ``name``, as the page gives it."""
    page = client.get(f"/system/users/{name}/tokens").get_data(as_text=True)
    return re.search(r'name="once" value="([^"]+)"', page).group(1)


def test_a_user_makes_a_named_token_on_their_page_and_sees_its_secret_once(login, app, webui_engine):
    operator = login("operator")
    empty = operator.post("/system/users/operator/tokens", data={"csrf_token": operator.csrf, "label": "  ",
                                                                 "once": once_of(operator, "operator")})
    assert empty.status_code == 400 and 'id="refusal-label">A token needs a label' in empty.get_data(as_text=True)
    assert '<p class="flash error">A token needs a label' in empty.get_data(as_text=True)
    # and the page without a refusal shows none: a template that asks for a name the view does not pass gets
    # the shared function of that name (webui/formfields.py), which is never empty
    unrefused = operator.get("/system/users/operator/tokens").get_data(as_text=True)
    assert 'class="refusal"' not in unrefused and "function refusal" not in unrefused
    form = {"csrf_token": operator.csrf, "label": "harvest report", "once": once_of(operator, "operator")}
    made = operator.post("/system/users/operator/tokens", data=form)
    assert made.status_code == 201 and made.headers["Cache-Control"] == "no-store"
    secret = re.search(r'id="token-secret" class="secret" value="(hs_[^"]+)"', made.get_data(as_text=True)).group(1)
    assert app.test_client().get("/api/v1/jobs", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    with webui_engine.connect() as conn:
        made_ids = [token.token_id for token in UserRepository(conn).tokens("operator") if token.label]
    again = operator.get("/system/users/operator/tokens").get_data(as_text=True)
    assert secret not in again and "harvest report" in again and "data-confirm=" in again
    # the same form sent again (its page reloaded) makes no second token and says which one it made
    for _ in range(3):
        resent = operator.post("/system/users/operator/tokens", data=form)
        text = resent.get_data(as_text=True)
        assert resent.status_code == 200 and resent.headers["Cache-Control"] == "no-store"
        assert f"API token {made_ids[0]} “harvest report” is made already" in text and secret not in text
    with webui_engine.connect() as conn:
        assert [token.token_id for token in UserRepository(conn).tokens("operator") if token.label] == made_ids
    # the session cookie keeps the form's mark and the token's id, never its secret
    with app.app_context():
        kept = app.session_interface.get_signing_serializer(app).loads(
            operator.get_cookie(app.config["SESSION_COOKIE_NAME"]).value)
    assert kept["made_tokens"] == [[form["once"], made_ids[0]]] and secret not in repr(kept)
    # a form without its mark makes none either: its page is from before the mark, or not from this web UI
    unmarked = operator.post("/system/users/operator/tokens", data={"csrf_token": operator.csrf, "label": "x"})
    assert unmarked.status_code == 400 and "one-time mark" in unmarked.get_data(as_text=True)
    # an admin sees and revokes another's tokens, and makes none of them
    admin_view = login("admin").get("/system/users/operator/tokens").get_data(as_text=True)
    assert "harvest report" in admin_view and 'name="label"' not in admin_view
    assert "made by operator alone" in admin_view
