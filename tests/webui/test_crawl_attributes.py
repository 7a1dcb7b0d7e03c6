"""Crawl attributes (max hops, robots.txt, JavaScript) on configurations, snapshot harvests and event seeds,
through the API and the pages, on SQLite and PostgreSQL: written into NetarchiveSuite's EAV tables as it
writes them (tree 2 per configuration, tree 1 per snapshot, val_int, type ids looked up by name), refused
with the field named when wrong (nothing stored), and read back by job generation into the crawl template."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select

from harvestdef.db import schema as s
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    for engine in database_with_users(database_url):
        with engine.begin() as conn:
            DomainRepository(conn).create("kb.dk")
            harvests = HarvestRepository(conn)
            harvests.create_snapshot("snap")
            harvests.create_selective("event", "Once_a_day", event=True)
        yield engine


def eav_rows(engine: Engine, tree: int, entity_id: int) -> dict[str, int]:
    """The entity's eav_attribute rows as NetarchiveSuite reads them: type name -> val_int."""
    ta, a = s.eav_type_attribute, s.eav_attribute
    with engine.connect() as conn:
        rows = conn.execute(select(ta.c.name, a.c.val_int, a.c.val_varchar, a.c.val_text, a.c.val_datetime)
                            .select_from(a.join(ta, (ta.c.tree_id == a.c.tree_id) & (ta.c.id == a.c.type_id)))
                            .where(a.c.tree_id == tree, a.c.entity_id == entity_id)).all()
    assert all(row[2] is None and row[3] is None and row[4] is None for row in rows), "only val_int is written"
    return {name: value for name, value, *_ in rows}


def config_id(engine: Engine, domain: str, name: str) -> int:
    with engine.connect() as conn:
        return ConfigurationRepository(conn).get(domain, name).config_id


def domain_edition(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return DomainRepository(conn).get(name).edition


def harvest_id(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return HarvestRepository(conn).get(name).harvest_id


def test_the_attribute_types_are_netarchivesuites_in_both_trees(webui_engine):
    ta = s.eav_type_attribute
    with webui_engine.connect() as conn:
        rows = conn.execute(select(ta.c.tree_id, ta.c.name, ta.c.class_namespace, ta.c.class_name, ta.c.datatype,
                                   ta.c.viewtype, ta.c.def_int).order_by(ta.c.tree_id, ta.c.id)).all()
    expected = [("MAX_HOPS", 1, 20), ("HONOR_ROBOTS_DOT_TXT", 6, 0), ("EXTRACT_JAVASCRIPT", 5, 1)]
    assert [tuple(row) for row in rows] == [
        (tree, name, "dk.netarkivet.harvester.datamodel.eav", "ContentAttrType_Generic", 1, viewtype, default)
        for tree in (1, 2) for name, viewtype, default in expected]
    with webui_engine.connect() as conn:
        assert conn.execute(select(ta.c.id).where(ta.c.tree_id == 2).order_by(ta.c.id)).scalars().all() == [1, 2, 3]


def test_a_configurations_attributes_through_the_api(api, webui_engine):
    path = "/api/v1/domains/kb.dk/configurations"
    made = api("curator", "post", path, json={
        "name": "legal", "template": "default_orderxml", "seedlists": ["defaultseeds"],
        "crawl_attributes": {"max_hops": 7, "honor_robots_dot_txt": False}})
    assert made.status_code == 201, made.get_json()
    assert made.get_json()["crawl_attributes"] == {"max_hops": 7, "honor_robots_dot_txt": False,
                                                   "extract_javascript": True}
    legal = config_id(webui_engine, "kb.dk", "legal")
    # every type gets its row, the one not given its default, as NetarchiveSuite's form saves them
    assert eav_rows(webui_engine, 2, legal) == {"MAX_HOPS": 7, "HONOR_ROBOTS_DOT_TXT": 0, "EXTRACT_JAVASCRIPT": 1}
    edition = domain_edition(webui_engine, "kb.dk")
    changed = api("curator", "patch", f"{path}/legal", json={"edition": edition,
                                                            "crawl_attributes": {"honor_robots_dot_txt": True}})
    assert changed.status_code == 200
    assert eav_rows(webui_engine, 2, legal) == {"MAX_HOPS": 7, "HONOR_ROBOTS_DOT_TXT": 1, "EXTRACT_JAVASCRIPT": 1}
    edition = domain_edition(webui_engine, "kb.dk")
    for bad, field in (({"max_hops": -1}, "crawl_attributes.max_hops"),
                       ({"max_hops": 1001}, "crawl_attributes.max_hops"),
                       ({"max_hops": "5"}, "crawl_attributes.max_hops"),
                       ({"max_hops": True}, "crawl_attributes.max_hops"),
                       ({"honor_robots_dot_txt": 1}, "crawl_attributes.honor_robots_dot_txt"),
                       ({"extract_javascript": "yes"}, "crawl_attributes.extract_javascript"),
                       ({"hops": 3}, "crawl_attributes.hops"),
                       ("deep", "crawl_attributes")):
        refused = api("curator", "patch", f"{path}/legal", json={"edition": edition, "comments": "changed",
                                                                "crawl_attributes": bad})
        assert refused.status_code == 400, (bad, refused.get_json())
        assert refused.get_json()["error"]["field"] == field, bad
    assert eav_rows(webui_engine, 2, legal)["MAX_HOPS"] == 7
    assert domain_edition(webui_engine, "kb.dk") == edition, "nothing was stored"
    listed = api("archivist", "get", path).get_json()["items"]
    assert {c["name"]: c["crawl_attributes"]["max_hops"] for c in listed} == {"defaultconfig": 20, "legal": 7}


def test_a_configurations_attributes_on_its_page(login, webui_engine):
    curator = login("curator")
    page_path = "/definitions/domains/kb.dk/configurations/defaultconfig"
    page = curator.get(page_path).get_data(as_text=True)
    assert 'name="max_hops"' in page and '<option value="ignore" selected>' in page
    fields = {"csrf_token": curator.csrf, "edition": domain_edition(webui_engine, "kb.dk"),
              "template": "default_orderxml", "seedlists": "defaultseeds", "max_objects": "-1", "max_bytes": "-1",
              "comments": "", "honor_robots_dot_txt": "obey", "extract_javascript": "false"}
    refused = curator.post(page_path, data={**fields, "max_hops": "twenty"})
    assert refused.status_code == 400, "the form is shown again, with what was typed"
    shown = html.unescape(refused.get_data(as_text=True))
    # beside the field what is wrong; the summary names the field by its label
    assert "must be a whole number from 0 to 1000, not 'twenty'</span>" in shown
    assert "Max hops: must be a whole number from 0 to 1000, not 'twenty'" in shown
    assert 'name="max_hops" type="text" value="twenty"' in shown
    default = config_id(webui_engine, "kb.dk", "defaultconfig")
    assert eav_rows(webui_engine, 2, default) == {}
    assert curator.post(page_path, data={**fields, "max_hops": "3"}).status_code == 302
    assert eav_rows(webui_engine, 2, default) == {"MAX_HOPS": 3, "HONOR_ROBOTS_DOT_TXT": 1, "EXTRACT_JAVASCRIPT": 0}
    page = curator.get(page_path).get_data(as_text=True)
    assert 'value="3"' in page and '<option value="obey" selected>' in page
    history = re.sub(r"<[^>]+>|\s+", " ", page[page.index("Change history"):])
    assert re.search(r"curator +created +Extract links from JavaScript +: no +Max hops +: 3 ",
                     history), "the change history shows the attributes' change in words, yes or no"


def test_a_configuration_made_with_its_attributes_is_created_once_in_its_history(login, api, webui_engine):
    curator = login("curator")
    made = curator.post("/definitions/domains/kb.dk/new-configuration", data={
        "csrf_token": curator.csrf, "edition": domain_edition(webui_engine, "kb.dk"), "name": "deep",
        "template": "default_orderxml", "seedlists": "defaultseeds", "max_objects": "-1", "max_bytes": "-1",
        "max_hops": "4", "honor_robots_dot_txt": "obey", "extract_javascript": "true"})
    assert made.status_code == 302, made.get_data(as_text=True)
    assert eav_rows(webui_engine, 2, config_id(webui_engine, "kb.dk", "deep")) == {
        "MAX_HOPS": 4, "HONOR_ROBOTS_DOT_TXT": 1, "EXTRACT_JAVASCRIPT": 1}
    body = {"name": "wide", "template": "default_orderxml", "seedlists": ["defaultseeds"],
            "edition": domain_edition(webui_engine, "kb.dk"), "crawl_attributes": {"max_hops": 9}}
    assert api("curator", "post", "/api/v1/domains/kb.dk/configurations", json=body).status_code == 201
    for name, hops in (("deep", "4"), ("wide", "9")):
        page = curator.get(f"/definitions/domains/kb.dk/configurations/{name}").get_data(as_text=True)
        history = re.sub(r"<[^>]+>|\s+", " ", page[page.index("Change history"):])
        assert len(re.findall(r"curator +created ", history)) == 1, (name, history)
        assert re.search(rf"created .*Max hops +: {hops} ", history), "its one entry holds its attributes"


def test_a_snapshots_own_attributes_through_the_api_and_the_page(api, login, webui_engine):
    snap = harvest_id(webui_engine, "snap")
    detail = api("archivist", "get", "/api/v1/harvests/snap").get_json()
    assert detail["crawl_attributes"] == {"max_hops": None, "honor_robots_dot_txt": None, "extract_javascript": None}
    done = api("curator", "patch", "/api/v1/harvests/snap", json={
        "edition": detail["edition"], "crawl_attributes": {"max_hops": 50, "honor_robots_dot_txt": False}})
    assert done.status_code == 200, done.get_json()
    assert eav_rows(webui_engine, 1, snap) == {"MAX_HOPS": 50, "HONOR_ROBOTS_DOT_TXT": 0}
    bad = api("curator", "patch", "/api/v1/harvests/snap", json={
        "edition": done.get_json()["edition"], "crawl_attributes": {"max_hops": 5000}})
    assert bad.status_code == 400 and bad.get_json()["error"]["field"] == "crawl_attributes.max_hops"
    selective = api("curator", "patch", "/api/v1/harvests/event", json={
        "edition": api("curator", "get", "/api/v1/harvests/event").get_json()["edition"],
        "crawl_attributes": {"max_hops": 5}})
    assert selective.status_code == 400 and selective.get_json()["error"]["field"] == "crawl_attributes"
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "snapshot", "name": "deep", "crawl_attributes": {"max_hops": 30, "extract_javascript": None}})
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["crawl_attributes"] == {"max_hops": 30, "honor_robots_dot_txt": None,
                                                      "extract_javascript": None}
    assert eav_rows(webui_engine, 1, harvest_id(webui_engine, "deep")) == {"MAX_HOPS": 30}
    refused = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "sel", "schedule": "Once_a_day", "crawl_attributes": {"max_hops": 3}})
    assert refused.status_code == 400 and refused.get_json()["error"]["field"] == "crawl_attributes"
    assert api("archivist", "get", "/api/v1/harvests/sel").status_code == 404, "nothing was stored"
    curator = login("curator")
    page = curator.get("/definitions/harvests/snap").get_data(as_text=True)
    assert 'name="max_hops" type="text" value="50"' in page
    saved = curator.post("/definitions/harvests/snap", data={
        "csrf_token": curator.csrf, "edition": done.get_json()["edition"], "name": "snap", "comments": "",
        "audience": "", "channel": "", "max_objects": "-1", "max_bytes": "-1", "max_running_time": "0",
        "max_hops": "", "honor_robots_dot_txt": "obey", "extract_javascript": ""})
    assert saved.status_code == 302
    # an empty field is "each configuration's own": its row goes
    assert eav_rows(webui_engine, 1, snap) == {"HONOR_ROBOTS_DOT_TXT": 1}


def test_event_seeds_carry_their_attributes_into_each_configuration(api, webui_engine):
    edition = api("curator", "get", "/api/v1/harvests/event").get_json()["edition"]
    added = api("curator", "post", "/api/v1/harvests/event/seeds", json={
        "edition": edition, "seeds": ["http://valg.dk/", "https://www.dr.dk/valg"], "template": "default_orderxml",
        "crawl_attributes": {"max_hops": 2, "honor_robots_dot_txt": True, "extract_javascript": False}})
    assert added.status_code == 201, added.get_json()
    for entry in added.get_json()["added"]:
        made = config_id(webui_engine, entry["domain"], entry["configuration"])
        assert eav_rows(webui_engine, 2, made) == {"MAX_HOPS": 2, "HONOR_ROBOTS_DOT_TXT": 1, "EXTRACT_JAVASCRIPT": 0}
    edition = added.get_json()["harvest"]["edition"]
    bad = api("curator", "post", "/api/v1/harvests/event/seeds", json={
        "edition": edition, "seeds": ["http://kb.dk/"], "template": "default_orderxml",
        "crawl_attributes": {"honor_robots_dot_txt": "obey"}})
    assert bad.status_code == 400 and bad.get_json()["error"]["field"] == "crawl_attributes.honor_robots_dot_txt"


def test_event_seeds_from_a_file_with_bad_lines_store_nothing(login, webui_engine):
    curator = login("curator")
    with webui_engine.connect() as conn:
        edition = HarvestRepository(conn).get("event").edition
    upload = "http://valg.dk/\nftp://kb.dk/files\n\nhttp://\n"
    response = curator.post("/definitions/harvests/event/seeds", content_type="multipart/form-data", data={
        "csrf_token": curator.csrf, "edition": edition, "template": "default_orderxml", "max_objects": "-1",
        "max_bytes": "-1", "max_hops": "4", "honor_robots_dot_txt": "ignore", "extract_javascript": "true",
        "seedsfile": (io.BytesIO(upload.encode()), "seeds.txt")})
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert "ftp://kb.dk/files" in text and "http://" in text
    assert ">2<" in text and ">4<" in text, "the refused lines are named by their numbers"
    with webui_engine.connect() as conn:
        assert list(HarvestRepository(conn).configurations("event")) == []
    good = curator.post("/definitions/harvests/event/seeds", content_type="multipart/form-data", data={
        "csrf_token": curator.csrf, "edition": edition, "template": "default_orderxml", "max_objects": "-1",
        "max_bytes": "-1", "max_hops": "4", "honor_robots_dot_txt": "ignore", "extract_javascript": "true",
        "seedsfile": (io.BytesIO(b"http://valg.dk/\n"), "seeds.txt")})
    assert good.status_code == 302
    with webui_engine.connect() as conn:
        (entry,) = HarvestRepository(conn).configurations("event")
    assert eav_rows(webui_engine, 2, entry.config_id) == {"MAX_HOPS": 4, "HONOR_ROBOTS_DOT_TXT": 0,
                                                          "EXTRACT_JAVASCRIPT": 1}


def test_job_generation_fills_the_template_with_the_written_attributes(api, webui_engine):
    """A configuration's values fill %{MAX_HOPS}, %{HONOR_ROBOTS_DOT_TXT}, %{EXTRACT_JAVASCRIPT}; a snapshot's
    own values replace its configurations'."""
    edition = domain_edition(webui_engine, "kb.dk")
    assert api("curator", "patch", "/api/v1/domains/kb.dk/configurations/defaultconfig", json={
        "edition": edition, "crawl_attributes": {"max_hops": 9, "honor_robots_dot_txt": True,
                                                 "extract_javascript": False}}).status_code == 200
    with webui_engine.begin() as conn:
        harvests = HarvestRepository(conn)
        created = harvests.create_selective("sel", "Once_a_day")
        harvests.add_configurations("sel", [("kb.dk", None)], created.edition)
    selective = generate_jobs(webui_engine, "sel", GenerationOptions(deduplication_enabled=False))
    assert template_values(webui_engine, selective.job_ids[0]) == ("9", "obey", "false")
    edition = api("curator", "get", "/api/v1/harvests/snap").get_json()["edition"]
    assert api("curator", "patch", "/api/v1/harvests/snap", json={
        "edition": edition, "crawl_attributes": {"honor_robots_dot_txt": False}}).status_code == 200
    snapshot = generate_jobs(webui_engine, "snap", GenerationOptions(deduplication_enabled=False))
    # the snapshot ignores robots.txt for every configuration; max hops and JavaScript stay the configuration's
    assert template_values(webui_engine, snapshot.job_ids[0]) == ("9", "ignore", "false")


def template_values(engine: Engine, job_id: int) -> tuple[str, ...]:
    with engine.connect() as conn:
        document = conn.scalar(select(s.jobs.c.orderxmldoc).where(s.jobs.c.job_id == job_id))
    hops = re.search(r'name="maxHops" value="([^"]*)"', document)
    robots = re.search(r'name="robotsPolicyName" value="([^"]*)"', document)
    javascript = re.search(r'name="extractJavascript" value="([^"]*)"', document)
    assert hops and robots and javascript, "the template has the three placeholders' beans"
    assert "%{" not in document.replace("%{DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER}", "")
    return hops.group(1), robots.group(1), javascript.group(1)
