"""Schedules, crawl templates, harvest definitions, global crawler traps and harvest channels through the API
and the Definitions pages, on a real SQLite harvest database."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.tick import set_harvest_state

GOOD_CXML = '<?xml version="1.0"?>\n<beans>\n  <bean id="x"/>\n</beans>\n'
BAD_CXML = '<?xml version="1.0"?>\n<beans>\n  <bean id="x">\n</beans>\n'
SCRIPT = '<script>alert("x")</script>'


def make_domains(engine, *names):
    with engine.begin() as conn:
        for name in names:
            DomainRepository(conn).create(name)


def count(engine, table):
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(table))


def selective_body(name="daily_news", schedule="Once_a_day", **extra):
    return {"type": "selective", "name": name, "schedule": schedule,
            "configurations": [{"domain": "a.dk", "configuration": "defaultconfig"}], **extra}


# ------------------------------------------------------------------ schedules (API)
def test_schedules_are_created_listed_and_paged(api):
    response = api("curator", "post", "/api/v1/schedules", json={
        "name": "weekly_monday", "timeunit": "WEEKLY", "numtimeunits": 1, "anytime": False, "onminute": 30,
        "onhour": 2, "ondayofweek": 2, "startdate": "2026-01-05T00:00:00Z", "maxrepeats": 10})
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["timeunit"] == "WEEKLY" and created["startdate"] == "2026-01-05T00:00:00Z"
    assert created["edition"] == 1 and created["maxrepeats"] == 10

    names = []
    path = "/api/v1/schedules?limit=2"
    while path:
        listing = api("archivist", "get", path).get_json()
        assert len(listing["items"]) <= 2
        names += [item["name"] for item in listing["items"]]
        path = f"/api/v1/schedules?limit=2&after={listing['next']}" if listing["next"] else None
    assert names == sorted(names) and "weekly_monday" in names and "Once_a_day" in names
    assert len(names) == len(set(names))
    assert api("operator", "get", "/api/v1/schedules/weekly_monday").get_json()["ondayofweek"] == 2


@pytest.mark.parametrize("body, field", [
    ({"name": "x", "timeunit": "FORTNIGHTLY"}, "timeunit"),
    ({"name": "x", "timeunit": "DAILY", "startdate": "next tuesday"}, "startdate"),
    ({"timeunit": "DAILY"}, "name"),
    ({"name": "x", "timeunit": "DAILY", "numtimeunits": "2"}, "numtimeunits"),
])
def test_a_bad_schedule_is_refused_naming_the_field(api, webui_engine, body, field):
    before = count(webui_engine, s.schedules)
    response = api("curator", "post", "/api/v1/schedules", json=body)
    assert response.status_code == 400
    assert response.get_json()["error"]["field"] == field
    assert count(webui_engine, s.schedules) == before


def test_a_schedule_breaking_its_rules_is_refused(api, webui_engine):
    before = count(webui_engine, s.schedules)
    response = api("curator", "post", "/api/v1/schedules", json={
        "name": "bad", "timeunit": "DAILY", "anytime": False, "onminute": 61, "onhour": 1})
    assert response.status_code == 400 and "onminute" in response.get_json()["error"]["message"]
    assert count(webui_engine, s.schedules) == before


def test_a_stale_schedule_edition_is_refused(api):
    api("curator", "post", "/api/v1/schedules", json={"name": "s1", "timeunit": "DAILY"})
    first = api("curator", "patch", "/api/v1/schedules/s1", json={"edition": 1, "numtimeunits": 2})
    assert first.status_code == 200 and first.get_json()["numtimeunits"] == 2 and first.get_json()["edition"] == 2
    stale = api("curator", "patch", "/api/v1/schedules/s1", json={"edition": 1, "numtimeunits": 3})
    assert stale.status_code == 409 and stale.get_json()["error"]["code"] == "conflict"
    assert api("curator", "get", "/api/v1/schedules/s1").get_json()["numtimeunits"] == 2


def test_only_curators_and_admins_write_schedules(api):
    for role in ("archivist", "operator"):
        response = api(role, "post", "/api/v1/schedules", json={"name": f"by_{role}", "timeunit": "DAILY"})
        assert response.status_code == 403
    assert api("admin", "post", "/api/v1/schedules", json={"name": "by_admin", "timeunit": 2}).status_code == 201
    assert api("archivist", "get", "/api/v1/schedules/by_operator").status_code == 404


# ------------------------------------------------------------------ templates (API)
def test_templates_are_uploaded_by_admins_only(api, webui_engine):
    before = count(webui_engine, s.ordertemplates)
    for role in ("curator", "archivist", "operator"):
        response = api(role, "post", "/api/v1/templates", json={"name": "t1", "cxml": GOOD_CXML})
        assert response.status_code == 403, role
    assert count(webui_engine, s.ordertemplates) == before
    response = api("admin", "post", "/api/v1/templates", json={"name": "t1", "cxml": GOOD_CXML})
    assert response.status_code == 201 and response.get_json()["cxml"] == GOOD_CXML
    got = api("archivist", "get", "/api/v1/templates/t1").get_json()
    assert got["cxml"] == GOOD_CXML and got["active"] is True
    listing = api("curator", "get", "/api/v1/templates").get_json()
    assert "t1" in [item["name"] for item in listing["items"]] and "cxml" not in listing["items"][0]
    download = api("curator", "get", "/api/v1/templates/t1?format=cxml")
    assert download.get_data(as_text=True) == GOOD_CXML and "t1.cxml" in download.headers["Content-Disposition"]


def test_a_malformed_template_is_refused_with_line_and_column(api, webui_engine):
    before = count(webui_engine, s.ordertemplates)
    response = api("admin", "post", "/api/v1/templates", json={"name": "broken", "cxml": BAD_CXML})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["field"] == "cxml" and "line 4" in error["message"] and "column" in error["message"]
    assert count(webui_engine, s.ordertemplates) == before
    assert api("admin", "get", "/api/v1/templates/broken").status_code == 404


def test_a_template_edit_with_a_stale_edition_is_refused(api):
    api("admin", "post", "/api/v1/templates", json={"name": "t2", "cxml": GOOD_CXML})
    response = api("admin", "patch", "/api/v1/templates/t2", json={"edition": 1, "active": False})
    assert response.status_code == 200 and response.get_json()["active"] is False
    stale = api("admin", "patch", "/api/v1/templates/t2", json={"edition": 1, "cxml": GOOD_CXML + "<!-- -->"})
    assert stale.status_code == 409
    bad = api("admin", "patch", "/api/v1/templates/t2", json={"edition": 2, "cxml": BAD_CXML})
    assert bad.status_code == 400 and bad.get_json()["error"]["field"] == "cxml"
    assert api("admin", "get", "/api/v1/templates/t2").get_json()["cxml"] == GOOD_CXML


# ------------------------------------------------------------------ harvests (API)
def test_a_selective_harvest_is_created_and_picked_up_by_job_generation(api, webui_engine):
    make_domains(webui_engine, "a.dk", "b.dk")
    response = api("curator", "post", "/api/v1/harvests", json={
        **selective_body(active=True, comments="news", audience="public"),
        "configurations": [{"domain": "a.dk", "configuration": "defaultconfig"},
                           {"domain": "b.dk", "configuration": None}]})
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["type"] == "selective" and created["active"] is True and created["schedule"] == "Once_a_day"
    assert created["channel"] == "FOCUSED"
    assert {c["domain"] for c in created["configurations"]} == {"a.dk", "b.dk"}

    result = generate_jobs(webui_engine, "daily_news", GenerationOptions())
    assert result.job_ids, "the harvest made through the API yields jobs"
    with webui_engine.connect() as conn:
        domains = set(conn.scalars(select(s.domains.c.name).join(
            s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id).join(
            s.job_configs, s.job_configs.c.config_id == s.configurations.c.config_id).where(
            s.job_configs.c.job_id.in_(result.job_ids))))
    assert domains == {"a.dk", "b.dk"}


@pytest.mark.parametrize("change, field", [
    ({"schedule": "No_such_schedule"}, "schedule"),
    ({"configurations": [{"domain": "a.dk", "configuration": "defaultconfig"},
                         {"domain": "a.dk", "configuration": "nope"}]}, "configurations"),
    ({"configurations": [{"domain": "unknown.dk", "configuration": "defaultconfig"}]}, "configurations"),
    ({"configurations": ["a.dk"]}, "configurations"),
    ({"channel": "NOPE"}, "channel"),
    ({"channel": "SNAPSHOT"}, "channel"),
    ({"type": "weekly"}, "type"),
])
def test_a_harvest_with_unknown_references_is_refused_and_nothing_stored(api, webui_engine, change, field):
    make_domains(webui_engine, "a.dk")
    response = api("curator", "post", "/api/v1/harvests", json={**selective_body(), **change})
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"]["field"] == field
    assert count(webui_engine, s.harvestdefinitions) == 0
    assert count(webui_engine, s.harvest_configs) == 0


def test_an_event_harvest_creates_configurations_and_seed_lists_per_domain(api, webui_engine):
    make_domains(webui_engine, "a.dk")
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": "election", "schedule": "Once", "template": "default_orderxml",
        "seeds": ["http://a.dk/valg", "https://www.b.dk/news", "http://b.dk/more"],
        "max_objects": 1000, "max_bytes": -1})
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    expected = "election_default_orderxml_UnlimitedBytes_1000Objects"
    assert sorted((c["domain"], c["configuration"]) for c in created["configurations"]) == [
        ("a.dk", expected), ("b.dk", expected)]
    with webui_engine.connect() as conn:
        config = ConfigurationRepository(conn).get("b.dk", expected)
        assert config.maxobjects == 1000 and config.maxbytes == -1
        seeds = SeedListRepository(conn).get("b.dk", expected).seeds
        assert "https://www.b.dk/news" in seeds and "http://b.dk/more" in seeds
        assert DomainRepository(conn).exists("b.dk"), "the unknown domain was created"


def test_an_event_harvest_with_an_unknown_template_stores_nothing(api, webui_engine):
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": "ev", "schedule": "Once", "template": "nope", "seeds": ["http://c.dk/"]})
    assert response.status_code == 400 and response.get_json()["error"]["field"] == "template"
    assert count(webui_engine, s.harvestdefinitions) == 0 and count(webui_engine, s.domains) == 0


def test_a_snapshot_harvest_and_its_waiting_reason(api, webui_engine):
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "snapshot", "name": "broad_2026", "max_bytes": 5000, "max_objects": -1, "max_running_time": 3600,
        "active": False})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["max_running_time"] == 3600 and response.get_json()["channel"] == "SNAPSHOT"
    bad = api("curator", "post", "/api/v1/harvests", json={
        "type": "snapshot", "name": "broad_2027", "previous": "no_such_snapshot"})
    assert bad.status_code == 400 and bad.get_json()["error"]["field"] == "previous"
    with webui_engine.begin() as conn:
        harvest_id = HarvestRepository(conn).get("broad_2026").harvest_id
        set_harvest_state(conn, harvest_id, "waiting", "waiting for the deduplication index", utcnow())
    got = api("archivist", "get", "/api/v1/harvests/broad_2026").get_json()
    assert got["state"]["state"] == "waiting" and "deduplication index" in got["state"]["reason"]
    listed = api("archivist", "get", "/api/v1/harvests?type=snapshot").get_json()["items"]
    assert [item["name"] for item in listed] == ["broad_2026"] and listed[0]["state"]["state"] == "waiting"


def test_harvests_are_activated_deactivated_and_edited_with_editions(api, webui_engine):
    make_domains(webui_engine, "a.dk")
    created = api("curator", "post", "/api/v1/harvests", json=selective_body()).get_json()
    activated = api("curator", "post", "/api/v1/harvests/daily_news/activate", json={"edition": created["edition"]})
    assert activated.status_code == 200 and activated.get_json()["active"] is True
    stale = api("curator", "post", "/api/v1/harvests/daily_news/deactivate", json={"edition": created["edition"]})
    assert stale.status_code == 409
    assert api("curator", "get", "/api/v1/harvests/daily_news").get_json()["active"] is True
    current = activated.get_json()["edition"]
    edited = api("curator", "patch", "/api/v1/harvests/daily_news", json={
        "edition": current, "comments": "new words", "schedule": "Once_a_week"})
    assert edited.status_code == 200, edited.get_json()
    assert edited.get_json()["comments"] == "new words" and edited.get_json()["schedule"] == "Once_a_week"
    stale_edit = api("curator", "patch", "/api/v1/harvests/daily_news", json={"edition": current, "comments": "x"})
    assert stale_edit.status_code == 409
    bad_schedule = api("curator", "patch", "/api/v1/harvests/daily_news", json={
        "edition": edited.get_json()["edition"], "schedule": "nope"})
    assert bad_schedule.status_code == 400 and bad_schedule.get_json()["error"]["field"] == "schedule"
    assert api("archivist", "post", "/api/v1/harvests/daily_news/deactivate").status_code == 403
    assert api("curator", "post", "/api/v1/harvests/daily_news/deactivate").get_json()["active"] is False
    assert api("curator", "get", "/api/v1/harvests/nope").status_code == 404


def test_archivists_and_operators_may_not_create_harvests(api, webui_engine):
    make_domains(webui_engine, "a.dk")
    for role in ("archivist", "operator"):
        assert api(role, "post", "/api/v1/harvests", json=selective_body()).status_code == 403
    assert count(webui_engine, s.harvestdefinitions) == 0


# ------------------------------------------------------------------ pages
def form(client, **fields):
    return {"csrf_token": client.csrf, **fields}


@pytest.mark.parametrize("path", ["/definitions/schedules", "/definitions/schedules/Once_a_day",
                                  "/definitions/templates", "/definitions/templates/default_orderxml/download",
                                  "/definitions/harvests", "/definitions/traps", "/definitions/channels",
                                  "/definitions/extendedfields", "/definitions/harvests/daily_news"])
def test_every_role_reads_the_definition_pages(login, api, webui_engine, path):
    make_domains(webui_engine, "a.dk")
    assert api("curator", "post", "/api/v1/harvests", json=selective_body()).status_code == 201
    for role in ("archivist", "operator", "curator", "admin"):
        assert login(role).get(path).status_code == 200, (role, path)


def test_write_forms_are_hidden_from_those_who_may_not_write(login):
    archivist = login("archivist")
    for path in ("/definitions/schedules", "/definitions/templates", "/definitions/traps", "/definitions/channels"):
        assert "<form method=\"post\" action=\"/definitions" not in archivist.get(path).get_data(as_text=True)
    curator = login("curator")
    assert "Create schedule" in curator.get("/definitions/schedules").get_data(as_text=True)
    assert "Upload" not in curator.get("/definitions/templates").get_data(as_text=True)
    assert "New channel" not in curator.get("/definitions/channels").get_data(as_text=True)
    assert "Upload" in login("admin").get("/definitions/templates").get_data(as_text=True)
    assert archivist.get("/definitions/harvests/new/selective").status_code == 403
    assert archivist.post("/definitions/harvests/new/snapshot", data=form(archivist, name="s")).status_code == 403


def test_the_api_description_lists_these_endpoints(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").get_json()["paths"]
    assert {"get", "post"} <= set(paths["/harvests"]) and "patch" in paths["/harvests/{name}"]
    assert "post" in paths["/harvests/{name}/activate"] and "post" in paths["/templates"]
    assert {"get", "post"} <= set(paths["/schedules"])


def test_a_schedule_is_created_and_edited_through_the_form(login, webui_engine):
    client = login("curator")
    response = client.post("/definitions/schedules", data=form(
        client, name="nightly", timeunit="DAILY", numtimeunits="1", when="at", onhour="3", onminute="15",
        begin="asap", end="repeats", maxrepeats="5"))
    assert response.status_code == 302
    page = client.get("/definitions/schedules/nightly").get_data(as_text=True)
    edition = re.search(r'name="edition" value="(\d+)"', page).group(1)
    response = client.post("/definitions/schedules/nightly", data=form(
        client, edition=edition, name="nightly", timeunit="WEEKLY", numtimeunits="2", when="anytime",
        begin="asap", end="forever"))
    assert response.status_code == 302
    with webui_engine.connect() as conn:
        row = conn.execute(select(s.schedules).where(s.schedules.c.name == "nightly")).one()
    assert (row.timeunit, row.numtimeunits, row.anytime, row.maxrepeats) == (3, 2, True, None)
    stale = client.post("/definitions/schedules/nightly", data=form(
        client, edition=edition, name="nightly", timeunit="DAILY", when="anytime", begin="asap", end="forever"))
    assert stale.status_code == 409
    assert "schedule nightly was changed by you (curator) in another tab" in stale.get_data(as_text=True)
    bad = client.post("/definitions/schedules", data=form(
        client, name="broken", timeunit="DAILY", when="at", onhour="25", onminute="0", begin="asap", end="forever"))
    assert bad.status_code == 400 and "Time: must be between 0 and 23, not 25" in bad.get_data(as_text=True)
    assert count(webui_engine, s.schedules.select().where(s.schedules.c.name == "broken").subquery()) == 0


def test_the_schedule_form_takes_typed_iso_8601_and_names_the_field_and_value_it_refuses(login, api):
    client = login("curator")
    typed = {"name": "iso", "timeunit": "DAILY", "numtimeunits": "1", "when": "at", "attime": "02:00",
             "begin": "at", "end": "repeats", "maxrepeats": "10"}
    refusals = {"1. december 2026": "must be an ISO 8601 time such as 2026-12-01T02:00:00Z (UTC when it has no "
                                    "zone), not '1. december 2026'",
                "": "give a begin time, or choose another option"}
    for startdate, refusal in refusals.items():
        refused = client.post("/definitions/schedules", data=form(client, **typed, startdate=startdate))
        page = html.unescape(refused.get_data(as_text=True))
        assert refused.status_code == 400 and f'<span class="refusal" id="refusal-startdate">{refusal}</span>' in page
        for name in ("attime", "maxrepeats"):
            assert re.search(rf'name="{name}" type="\w+" value="{typed[name]}"', page), (name, "kept as typed")
        assert re.search(r'name="end" value="repeats" checked', page), "the end chosen is kept"
    late = client.post("/definitions/schedules", data=form(client, **{**typed, "attime": "25:00"},
                                                            startdate="2026-12-01T02:00"))
    late_page = html.unescape(late.get_data(as_text=True))
    assert late.status_code == 400 and "Time: must be a time of day as HH:MM (24-hour clock), not '25:00'" in late_page
    assert '<span class="refusal" id="refusal-attime">must be a time of day as HH:MM (24-hour clock), not ' \
           "'25:00'</span>" in late_page
    assert client.post("/definitions/schedules", data=form(client, **typed, startdate="2026-12-01T02:00:00Z")
                       ).status_code == 302
    saved = api("curator", "get", "/api/v1/schedules/iso").get_json()
    assert (saved["startdate"], saved["onhour"], saved["onminute"], saved["maxrepeats"]) == (
        "2026-12-01T02:00:00Z", 2, 0, 10)


def test_a_form_post_without_or_with_a_forged_csrf_token_is_refused(login, webui_engine):
    client = login("admin")
    before = count(webui_engine, s.schedules)
    for token in (None, "forged"):
        data = {"name": "sneaky", "timeunit": "DAILY", "when": "anytime", "begin": "asap", "end": "forever"}
        if token:
            data["csrf_token"] = token
        assert client.post("/definitions/schedules", data=data).status_code == 403
        assert client.post("/definitions/templates", data={**data, "cxml": GOOD_CXML}).status_code == 403
        assert client.post("/definitions/harvests/new/snapshot", data=data).status_code == 403
        assert client.post("/definitions/traps", data={**data, "expressions": ".*x"}).status_code == 403
        assert client.post("/definitions/channels", data=data).status_code == 403
    assert count(webui_engine, s.schedules) == before
    assert count(webui_engine, s.harvestdefinitions) == 0 and count(webui_engine, s.global_crawler_trap_lists) == 0
    with webui_engine.connect() as conn:
        assert conn.scalar(select(func.count()).where(s.ordertemplates.c.name == "sneaky")) == 0
        assert conn.scalar(select(func.count()).where(s.harvestchannel.c.name == "SNEAKY")) == 0


def test_template_upload_shows_line_and_column_and_stores_nothing(login, webui_engine):
    from io import BytesIO
    admin = login("admin")
    before = count(webui_engine, s.ordertemplates)
    response = admin.post("/definitions/templates", content_type="multipart/form-data", data=form(
        admin, name="broken", file=(BytesIO(BAD_CXML.encode()), "broken.cxml")))
    assert response.status_code == 400
    assert re.search(r"line 4, column \d+", response.get_data(as_text=True))
    assert count(webui_engine, s.ordertemplates) == before
    response = admin.post("/definitions/templates", content_type="multipart/form-data", data=form(
        admin, name="good", file=(BytesIO(GOOD_CXML.encode()), "good.cxml")))
    assert response.status_code == 302
    assert admin.get("/definitions/templates/good/download").get_data(as_text=True) == GOOD_CXML
    response = admin.post("/definitions/templates/good/active", data=form(admin, edition="1", active="0"))
    assert response.status_code == 302
    with webui_engine.connect() as conn:
        assert conn.scalar(select(s.ordertemplates.c.isactive).where(s.ordertemplates.c.name == "good")) is False
    curator = login("curator")
    assert curator.post("/definitions/templates", data=form(curator, name="c", cxml=GOOD_CXML)).status_code == 403
    assert curator.post("/definitions/templates/good/active",
                        data=form(curator, edition="2", active="1")).status_code == 403
    archivist = login("archivist")
    assert archivist.post("/definitions/channels", data=form(archivist, name="X")).status_code == 403
    assert count(webui_engine, s.ordertemplates) == before + 1


def test_harvests_are_made_through_the_forms_and_script_is_escaped(login, webui_engine):
    make_domains(webui_engine, "a.dk")
    client = login("curator")
    response = client.post("/definitions/harvests/new/selective", data=form(
        client, name="sel", schedule="Once_a_day", comments=SCRIPT, configurations="a.dk\n", active="1"))
    assert response.status_code == 302, response.get_data(as_text=True)
    with webui_engine.begin() as conn:
        harvest_id = HarvestRepository(conn).get("sel").harvest_id
        set_harvest_state(conn, harvest_id, "deactivated", f"job generation failed: {SCRIPT}", utcnow())
    for path in ("/definitions/harvests", "/definitions/harvests/sel"):
        page = client.get(path).get_data(as_text=True)
        assert SCRIPT not in page and "&lt;script&gt;" in page, path
        assert "job generation failed" in page
    bad = client.post("/definitions/harvests/new/selective", data=form(
        client, name="sel2", schedule="Once_a_day", configurations="a.dk/nope\n"))
    assert bad.status_code == 400 and "configurations" in bad.get_data(as_text=True)
    bad = client.post("/definitions/harvests/new/selective", data=form(client, name="sel3", schedule="Nope"))
    assert bad.status_code == 400 and "schedule" in bad.get_data(as_text=True)
    response = client.post("/definitions/harvests/new/event", data=form(
        client, name="ev", schedule="Once", template="default_orderxml", seeds="http://b.dk/x\nhttp://a.dk/y",
        max_objects="-1", max_bytes="100"))
    assert response.status_code == 302, response.get_data(as_text=True)
    response = client.post("/definitions/harvests/new/snapshot", data=form(
        client, name="snap", max_objects="-1", max_bytes="1000", max_running_time="0"))
    assert response.status_code == 302
    with webui_engine.connect() as conn:
        harvests = HarvestRepository(conn)
        assert {h.name for h in harvests.all_harvests()} == {"sel", "ev", "snap"}
        assert {e.domain_name for e in harvests.configurations("ev")} == {"a.dk", "b.dk"}
        snap = harvests.get("snap")
    response = client.post("/definitions/harvests/snap/active", data=form(client, edition=str(snap.edition),
                                                                          active="1", back="list"))
    assert response.status_code == 302 and response.headers["Location"].endswith("/definitions/harvests")
    stale = client.post("/definitions/harvests/snap/active", data=form(client, edition=str(snap.edition),
                                                                       active="0"))
    assert stale.status_code == 409
    with webui_engine.connect() as conn:
        assert HarvestRepository(conn).get("snap").isactive is True
    sel = client.get("/definitions/harvests/sel").get_data(as_text=True)
    edition = re.search(r'name="edition" value="(\d+)"', sel).group(1)
    response = client.post("/definitions/harvests/sel", data=form(
        client, edition=edition, comments="calm", audience="", schedule="Once_a_week", crawlertraps=".*calendar.*"))
    assert response.status_code == 302
    stale = client.post("/definitions/harvests/sel/seeds", data=form(
        client, edition=edition, seeds="http://c.dk/", template="default_orderxml"))
    assert stale.status_code == 409
    edition = re.search(r'name="edition" value="(\d+)"',
                        client.get("/definitions/harvests/sel").get_data(as_text=True)).group(1)
    response = client.post("/definitions/harvests/sel/seeds", data=form(
        client, edition=edition, seeds="http://c.dk/", template="default_orderxml"))
    with webui_engine.connect() as conn:
        sel_harvest = HarvestRepository(conn).get("sel")
        assert sel_harvest.comments == "calm" and sel_harvest.schedule_name == "Once_a_week"
        assert sel_harvest.crawlertraps == (".*calendar.*",)
    assert response.status_code == 302, response.get_data(as_text=True)
    assert "c.dk" in client.get("/definitions/harvests/sel").get_data(as_text=True)


def test_global_crawler_traps_through_the_form(login, webui_engine):
    client = login("curator")
    response = client.post("/definitions/traps", data=form(client, name="calendars",
                                                            expressions=".*/calendar/.*\n.*\\?date=.*\n"))
    assert response.status_code == 302
    bad = client.post("/definitions/traps", data=form(client, name="broken", expressions="ok\n(unclosed\n"))
    assert bad.status_code == 400 and "line 2" in bad.get_data(as_text=True)
    assert client.post("/definitions/traps/calendars/active", data=form(client, active="1")).status_code == 302
    with webui_engine.connect() as conn:
        traps = GlobalCrawlerTrapRepository(conn)
        assert [(t.name, t.isactive, t.expressions) for t in traps.all_lists()] == [
            ("calendars", True, (".*/calendar/.*", ".*\\?date=.*"))]
    assert client.get("/definitions/traps/calendars/download").get_data(as_text=True).startswith(".*/calendar/.*")
    archivist = login("archivist")
    assert archivist.post("/definitions/traps/calendars/active", data=form(archivist, active="0")).status_code == 403


def test_channels_and_the_mapping_are_admin_only(login, api, webui_engine):
    make_domains(webui_engine, "a.dk")
    api("curator", "post", "/api/v1/harvests", json=selective_body())
    admin = login("admin")
    response = admin.post("/definitions/channels", data=form(admin, name="urgent", comments=SCRIPT))
    assert response.status_code == 302
    page = admin.get("/definitions/channels").get_data(as_text=True)
    assert "URGENT" in page and SCRIPT not in page
    curator = login("curator")
    edition = api("curator", "get", "/api/v1/harvests/daily_news").get_json()["edition"]
    denied = curator.post("/definitions/channels/mapping", data=form(curator, harvest="daily_news",
                                                                      channel="URGENT", edition=str(edition)))
    assert denied.status_code == 403
    wrong_kind = admin.post("/definitions/channels/mapping", data=form(admin, harvest="daily_news",
                                                                        channel="SNAPSHOT", edition=str(edition)))
    assert wrong_kind.status_code == 400
    response = admin.post("/definitions/channels/mapping", data=form(admin, harvest="daily_news",
                                                                      channel="URGENT", edition=str(edition)))
    assert response.status_code == 302
    assert api("archivist", "get", "/api/v1/harvests/daily_news").get_json()["channel"] == "URGENT"
    bad = admin.post("/definitions/channels", data=form(admin, name="no spaces"))
    assert bad.status_code == 400


def test_extended_fields_are_defined_by_admins_only(login, webui_engine):
    admin = login("admin")
    response = admin.post("/definitions/extendedfields", data=form(
        admin, field_type="HARVESTDEFINITIONS", name=SCRIPT, datatype="SELECT", options="red\nblue"))
    assert response.status_code == 302
    page = admin.get("/definitions/extendedfields").get_data(as_text=True)
    assert SCRIPT not in page and "&lt;script&gt;" in page and "red, blue" in page
    bad = admin.post("/definitions/extendedfields", data=form(admin, field_type="DOMAINS", name="x",
                                                              datatype="SELECT"))
    assert bad.status_code == 400 and "needs options" in bad.get_data(as_text=True)
    curator = login("curator")
    denied = curator.post("/definitions/extendedfields", data=form(curator, field_type="DOMAINS", name="y",
                                                                   datatype="STRING"))
    assert denied.status_code == 403
    assert "Define field" not in curator.get("/definitions/extendedfields").get_data(as_text=True)
    assert count(webui_engine, s.extendedfield) == 1
    with webui_engine.connect() as conn:
        field_id = conn.scalar(select(s.extendedfield.c.extendedfield_id))
    assert curator.post(f"/definitions/extendedfields/{field_id}/delete", data=form(curator)).status_code == 403
    assert admin.post(f"/definitions/extendedfields/{field_id}/delete", data=form(admin)).status_code == 302
    assert count(webui_engine, s.extendedfield) == 0
