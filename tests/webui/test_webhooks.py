"""Webhooks through the API and the pages: admins define, change and delete them; bad input is refused naming
the field, through the API and the form alike, and nothing is stored; other roles are refused; the secret
is never shown back, in answers, pages or the audit trail."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.repositories.webhookevents import WebhookEvents
from harvestdef.repositories.webhooks import WebhookRepository
from harvestdef.settings import load_settings
from webui import create_app

SECRET = "s3cret-shared-with-the-receiver"
GOOD = {"name": "ops chat", "url": "https://chat.example.org/hooks/T000/B000/XXXX", "events": ["job_failed"],
        "secret": SECRET}


def stored(engine) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.webhooks))


def test_an_admin_defines_changes_and_deletes_a_webhook_and_its_secret_is_never_shown(api, webui_engine):
    made = api("admin", "post", "/api/v1/webhooks", json={**GOOD, "events": ["harvest_run_done", "job_failed"]})
    assert made.status_code == 201, made.get_json()
    hook = made.get_json()
    assert (hook["name"], hook["url"], hook["events"], hook["active"]) == (
        "ops chat", GOOD["url"], ["job_failed", "harvest_run_done"], True)
    assert hook["secret_hint"] == f"{len(SECRET)} characters, ending …iver" and "secret" not in hook
    listed = api("admin", "get", "/api/v1/webhooks").get_json()
    assert [item["id"] for item in listed["items"]] == [hook["id"]] and "controller_lost" in listed["events"]
    assert SECRET not in api("admin", "get", "/api/v1/webhooks").get_data(as_text=True)

    changed = api("admin", "patch", f"/api/v1/webhooks/{hook['id']}",
                  json={"edition": hook["edition"], "active": False, "secret": "another secret, long enough"})
    assert changed.status_code == 200 and changed.get_json()["active"] is False
    assert changed.get_json()["secret_hint"].endswith("…ough")
    stale = api("admin", "patch", f"/api/v1/webhooks/{hook['id']}", json={"edition": hook["edition"], "name": "x"})
    assert stale.status_code == 409
    assert "changed by you (admin) in another tab or request" in stale.get_json()["error"]["message"]
    with webui_engine.connect() as conn:
        audited = conn.execute(select(s.audit_log.c.action, s.audit_log.c.before, s.audit_log.c.after).where(
            s.audit_log.c.tablename == "webhooks")).all()
    assert [row.action for row in audited] == ["insert", "update"]
    assert not any(SECRET in (row.before or "") + (row.after or "") or "another secret" in (row.after or "")
                   for row in audited)
    assert '"secret": "(changed; not shown)"' in audited[1].after

    gone = api("admin", "delete", f"/api/v1/webhooks/{hook['id']}")
    assert gone.status_code == 200 and api("admin", "get", f"/api/v1/webhooks/{hook['id']}").status_code == 404
    assert stored(webui_engine) == 0


def test_deactivating_a_webhook_fails_its_pending_deliveries_saying_why(api, webui_engine):
    hook = api("admin", "post", "/api/v1/webhooks", json={**GOOD, "events": ["harvest_deactivated"]}).get_json()
    with write_transaction(webui_engine) as conn:
        assert WebhookEvents(conn).harvest_deactivated(5, "no configurations") == 1
    api("admin", "patch", f"/api/v1/webhooks/{hook['id']}", json={"edition": hook["edition"], "active": False})
    (item,) = api("admin", "get", "/api/v1/webhooks/deliveries").get_json()["items"]
    assert item["state"] == "failed" and item["last_error"] == "not sent: the webhook was deactivated by admin"
    assert item["attempts"] == 0 and item["document"]["reason"] == "no configurations"
    with write_transaction(webui_engine) as conn:
        assert WebhookEvents(conn).harvest_deactivated(5, "again") == 0, "an inactive webhook gets nothing"


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"url": "ftp://files.example.org/x"}, "url", "must start with http:// or https://, not ftp:"),
    ({"url": "chat.example.org/hook"}, "url", "must start with http:// or https://, not no scheme"),
    ({"url": "https:///path-only"}, "url", "has no host"),
    ({"url": "https://chat.example.org/a hook"}, "url", "contains spaces"),
    ({"url": "https://user:pw@chat.example.org/"}, "url", "must not carry a user name or password"),
    ({"url": "https://chat.example.org:99999/"}, "url", "port that is not a number from 1 to 65535"),
    ({"url": "https://chat.example.org/#part"}, "url", "#fragment"),
    ({"url": ""}, "url", "is required"),
    ({"url": 17}, "url", "url must be str, not int"),
    ({"events": []}, "events", "choose at least one event"),
    ({"events": ["job_done"]}, "events", "'job_done' is not an event; choose from job_failed"),
    ({"events": [3]}, "events", "events[0] must be an event's name"),
    ({"events": "job_failed"}, "events", "events must be list"),
    ({"secret": "short"}, "secret", "needs at least 16 characters (it has 5)"),
    ({"secret": " padded secret value "}, "secret", "begins or ends with a space"),
    ({"secret": "x" * 201}, "secret", "at most 200"),
    ({"name": "   "}, "name", "a webhook needs a name"),
    ({"name": "n" * 101}, "name", "100"),
    ({"active": "yes"}, "active", "active must be bool"),
])
def test_bad_webhook_input_is_refused_naming_the_field_and_nothing_is_stored(api, webui_engine, change, field,
                                                                              words):
    answer = api("admin", "post", "/api/v1/webhooks", json={**GOOD, **change})
    assert answer.status_code == 400, answer.get_json()
    error = answer.get_json()["error"]
    assert error["field"] == field and words in error["message"], error
    assert stored(webui_engine) == 0


def test_a_name_in_use_is_a_conflict_and_missing_fields_are_named(api, webui_engine):
    assert api("admin", "post", "/api/v1/webhooks", json=GOOD).status_code == 201
    again = api("admin", "post", "/api/v1/webhooks", json=GOOD)
    assert again.status_code == 409 and "ops chat" in again.get_json()["error"]["message"]
    for missing in ("name", "url", "secret"):
        answer = api("admin", "post", "/api/v1/webhooks", json={k: v for k, v in GOOD.items() if k != missing})
        assert answer.status_code == 400 and answer.get_json()["error"]["field"] == missing
    assert stored(webui_engine) == 1


@pytest.mark.parametrize("role", ["curator", "operator", "archivist"])
def test_only_admins_may_see_or_change_webhooks_and_their_log(api, login, role, webui_engine):
    hook = api("admin", "post", "/api/v1/webhooks", json=GOOD).get_json()
    for method, path, body in [("get", "/api/v1/webhooks", None), ("post", "/api/v1/webhooks", GOOD),
                               ("get", f"/api/v1/webhooks/{hook['id']}", None),
                               ("patch", f"/api/v1/webhooks/{hook['id']}", {"edition": 1, "active": False}),
                               ("delete", f"/api/v1/webhooks/{hook['id']}", None),
                               ("get", "/api/v1/webhooks/deliveries", None),
                               ("post", "/api/v1/webhooks/deliveries/1/send-again", None)]:
        answer = api(role, method, path, json=body) if body is not None else api(role, method, path)
        assert answer.status_code == 403, (method, path, answer.status_code)
        assert "admin" in answer.get_json()["error"]["message"]
    client = login(role)
    assert client.get("/system/webhooks").status_code == 403
    assert client.post("/system/webhooks", data={**GOOD, "csrf_token": client.csrf}).status_code == 403
    system = client.get("/system").get_data(as_text=True)
    assert "Admins manage webhooks" in system and "/system/webhooks" not in system
    assert stored(webui_engine) == 1


def test_the_description_gives_the_webhook_routes_to_admins_only(api):
    paths = api("admin", "get", "/api/v1/openapi.json").get_json()["paths"]
    for path, methods in [("/webhooks", ("get", "post")), ("/webhooks/{webhook_id}", ("get", "patch", "delete")),
                          ("/webhooks/deliveries", ("get",)),
                          ("/webhooks/deliveries/{delivery_id}/send-again", ("post",))]:
        for method in methods:
            assert paths[path][method]["x-roles"] == ["admin"], (path, method)
    body = paths["/webhooks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["name", "url", "events", "secret"]
    assert body["properties"]["events"]["items"]["enum"] == ["job_failed", "harvest_run_done",
                                                             "harvest_deactivated", "controller_lost"]
    assert "201" in paths["/webhooks"]["post"]["responses"]
    states = {p["name"]: p for p in paths["/webhooks/deliveries"]["get"]["parameters"]}["state"]
    assert states["schema"]["enum"] == ["pending", "delivered", "failed"]


def form(client, **fields):
    data = {"csrf_token": client.csrf, "name": GOOD["name"], "url": GOOD["url"], "events": ["job_failed"],
            "secret": SECRET, "active": "1"}
    data.update(fields)
    return data


def test_the_webhooks_page_makes_one_and_shows_a_refusal_with_what_was_typed(login, webui_engine):
    client = login("admin")
    page = client.get("/system/webhooks").get_data(as_text=True)
    assert "No webhooks yet" in page and 'name="secret"' in page and "Delivery log" in page
    refused = client.post("/system/webhooks", data=form(client, url="ftp://files.example.org/x", name="typed"))
    text = refused.get_data(as_text=True)
    assert refused.status_code == 400 and "must start with http:// or https://" in text
    assert 'value="typed"' in text and 'value="ftp://files.example.org/x"' in text, "what was typed stays"
    assert stored(webui_engine) == 0
    no_events = client.post("/system/webhooks", data=form(client, events=[]))
    assert no_events.status_code == 400 and "choose at least one event" in no_events.get_data(as_text=True)

    saved = client.post("/system/webhooks", data=form(client), follow_redirects=True)
    text = saved.get_data(as_text=True)
    assert saved.status_code == 200 and "Webhook ops chat saved" in text and "ending …iver" in text
    assert SECRET not in text, "shown once as a hint, never in full"
    assert 'href="/system/webhooks"' in client.get("/system").get_data(as_text=True)


def test_the_edit_form_keeps_the_secret_when_left_empty_and_deletes(login, webui_engine):
    client = login("admin")
    client.post("/system/webhooks", data=form(client))
    with webui_engine.connect() as conn:
        (hook,) = WebhookRepository(conn).list()
    page = client.get(f"/system/webhooks/{hook.webhook_id}").get_data(as_text=True)
    assert "unchanged (31 characters, ending …iver)" in page and SECRET not in page
    changed = client.post(f"/system/webhooks/{hook.webhook_id}", follow_redirects=True, data=form(
        client, secret="", events=["controller_lost", "job_failed"], active="", edition=str(hook.edition)))
    assert changed.status_code == 200 and "inactive: it gets no deliveries" in changed.get_data(as_text=True)
    with webui_engine.connect() as conn:
        now = WebhookRepository(conn).get(hook.webhook_id)
    assert now.secret == SECRET and [e.value for e in now.events] == ["job_failed", "controller_lost"]
    assert not now.isactive
    stale = client.post(f"/system/webhooks/{hook.webhook_id}", data=form(client, edition=str(hook.edition)))
    assert stale.status_code == 409
    assert "changed by you (admin) in another tab or request" in stale.get_data(as_text=True)
    deleted = client.post(f"/system/webhooks/{hook.webhook_id}/delete", data={"csrf_token": client.csrf},
                          follow_redirects=True)
    assert "Webhook ops chat deleted" in deleted.get_data(as_text=True) and stored(webui_engine) == 0


@pytest.mark.parametrize(("url", "kind"), [("http://127.0.0.1:15672/api/queues", "loopback"),
                                           ("http://localhost:5432/", "loopback"),
                                           ("https://192.168.1.20/hooks", "private"),
                                           ("http://[fd00::5]/hooks", "private"),
                                           ("http://169.254.169.254/latest/meta-data/", "link-local")])
def test_an_internal_address_is_refused_when_saved_naming_it_and_why(api, login, webui_engine, url, kind):
    answer = api("admin", "post", "/api/v1/webhooks", json={**GOOD, "url": url})
    assert answer.status_code == 400, answer.get_json()
    error = answer.get_json()["error"]
    assert error["field"] == "url" and url in error["message"] and f"is a {kind} address" in error["message"]
    assert "harvestsuite.network.allowDestinations" in error["message"]
    hook = api("admin", "post", "/api/v1/webhooks", json=GOOD).get_json()
    changed = api("admin", "patch", f"/api/v1/webhooks/{hook['id']}", json={"edition": hook["edition"], "url": url})
    assert changed.status_code == 400 and changed.get_json()["error"]["field"] == "url"
    client = login("admin")
    page = client.post("/system/webhooks", data=form(client, url=url, name="internal"))
    text = page.get_data(as_text=True)
    assert page.status_code == 400 and f"is a {kind} address" in text and f'value="{url}"' in text
    assert stored(webui_engine) == 1, "only the public one"


def test_an_address_the_operator_allows_is_saved(webui_engine, tokens, tmp_path):
    settings = load_settings(environ={}, overrides={
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        "harvestsuite.network.allowDestinations": "10.20.0.0/16,hooks.intranet.example.org"})
    client = create_app(settings, webui_engine, {"TESTING": True}).test_client()
    headers = {"Authorization": f"Bearer {tokens['admin']}"}
    for name, url in (("ops", "http://10.20.3.4:8080/hooks"), ("intranet", "https://hooks.intranet.example.org/x")):
        answer = client.post("/api/v1/webhooks", headers=headers, json={**GOOD, "name": name, "url": url})
        assert answer.status_code == 201, answer.get_json()
    refused = client.post("/api/v1/webhooks", headers=headers, json={**GOOD, "url": "http://10.21.0.1/hooks"})
    assert refused.status_code == 400 and "10.21.0.1 is a private address" in refused.get_json()["error"]["message"]
