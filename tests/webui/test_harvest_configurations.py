"""Removing a domain configuration from a selective harvest (NetarchiveSuite's "remove config" on a selective
harvest's edit page), through the API and through the harvest page's Remove button: curators and admins only,
under the harvest's edition, audited, and the configuration stays with its domain. On SQLite and on
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine

from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")

PATH = "/api/v1/harvests/sel/configurations/dr.dk/defaultconfig"
PAGE = "/definitions/harvests/sel"
REMOVE = "/definitions/harvests/sel/configurations/dr.dk/defaultconfig/remove"


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The web UI's database with kb.dk and dr.dk, both in the selective harvest "sel", and a snapshot."""
    for engine in database_with_users(database_url):
        with engine.begin() as conn:
            for name in ("kb.dk", "dr.dk"):
                DomainRepository(conn).create(name)
            harvests = HarvestRepository(conn)
            created = harvests.create_selective("sel", "Once_a_day")
            harvests.add_configurations("sel", [("kb.dk", None), ("dr.dk", None)], created.edition)
            harvests.create_snapshot("snap")
        yield engine


def harvest_state(engine: Engine) -> tuple[list[tuple[str, str]], int]:
    with engine.connect() as conn:
        harvests = HarvestRepository(conn)
        return ([(e.domain_name, e.config_name) for e in harvests.configurations("sel")],
                harvests.get("sel").edition)


def removals(engine: Engine) -> list[tuple[str, str]]:
    """The audit trail's removals of dr.dk's configuration from "sel": (actor, action)."""
    with engine.connect() as conn:
        harvest_id = HarvestRepository(conn).get("sel").harvest_id
        config_id = ConfigurationRepository(conn).get("dr.dk", "defaultconfig").config_id
        changes = AuditRepository(conn).changes_of("harvest_configs", f"{harvest_id}:{config_id}")
    return [(c.actor, c.action) for c in changes if c.action == "delete"]


def form(client: Any, **fields: object) -> dict[str, object]:
    return {"csrf_token": client.csrf, **fields}


def test_a_curator_removes_a_configuration_through_the_api(api, webui_engine):
    both, edition = harvest_state(webui_engine)
    assert both == [("dr.dk", "defaultconfig"), ("kb.dk", "defaultconfig")]
    for role in ("archivist", "operator"):
        assert api(role, "delete", PATH, json={"edition": edition}).status_code == 403
    stale = api("curator", "delete", PATH, json={"edition": edition - 1})
    assert stale.status_code == 409 and stale.get_json()["error"]["code"] == "conflict"
    missing = api("curator", "delete", PATH, json={})
    assert missing.status_code == 400 and missing.get_json()["error"]["field"] == "edition"
    assert harvest_state(webui_engine) == (both, edition) and removals(webui_engine) == []

    removed = api("curator", "delete", PATH, json={"edition": edition})
    assert removed.status_code == 200, removed.get_json()
    answer = removed.get_json()
    assert answer["configurations"] == [{"domain": "kb.dk", "configuration": "defaultconfig"}]
    assert answer["edition"] == edition + 1
    assert harvest_state(webui_engine) == ([("kb.dk", "defaultconfig")], edition + 1)
    assert removals(webui_engine) == [("curator", "delete")]
    with webui_engine.connect() as conn:  # the configuration stays with its domain
        assert ConfigurationRepository(conn).get("dr.dk", "defaultconfig").is_default

    again = api("curator", "delete", PATH, json={"edition": edition + 1})
    assert again.status_code == 404 and "dr.dk/defaultconfig" in again.get_json()["error"]["message"]
    unknown = api("admin", "delete", "/api/v1/harvests/sel/configurations/kb.dk/nosuch", json={"edition": edition + 1})
    assert unknown.status_code == 404
    snapshot = api("admin", "delete", "/api/v1/harvests/snap/configurations/kb.dk/defaultconfig",
                   json={"edition": 1})
    assert snapshot.status_code == 400
    assert api("admin", "delete", "/api/v1/harvests/sel/configurations/kb.dk/defaultconfig",
               json={"edition": edition + 1}).status_code == 200
    assert harvest_state(webui_engine) == ([], edition + 2)


def test_the_api_description_has_the_route_with_its_edition(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").get_json()["paths"]
    operation = paths["/harvests/{name}/configurations/{domain}/{configuration}"]["delete"]
    assert {p["name"] for p in operation["parameters"]} == {"name", "domain", "configuration"}
    body = operation["requestBody"]
    assert body["required"] and body["content"]["application/json"]["schema"]["required"] == ["edition"]
    assert operation["x-roles"] == ["admin", "curator"] and {"200", "404", "409"} <= set(operation["responses"])


def test_the_harvest_page_removes_a_configuration_with_its_button(login, webui_engine):
    both, edition = harvest_state(webui_engine)
    archivist = login("archivist")
    assert REMOVE not in archivist.get(PAGE).get_data(as_text=True)
    assert archivist.post(REMOVE, data=form(archivist, edition=edition)).status_code == 403
    curator = login("curator")
    page = curator.get(PAGE).get_data(as_text=True)
    assert f'action="{REMOVE}"' in page and page.count(">Remove</button>") == 2
    assert curator.post(REMOVE, data={"edition": edition}).status_code == 403  # no CSRF token
    assert curator.post(REMOVE, data={"edition": edition, "csrf_token": "forged"}).status_code == 403
    stale = curator.post(REMOVE, data=form(curator, edition=edition - 1))
    assert stale.status_code == 409 and "changed by somebody else" in stale.get_data(as_text=True)
    assert harvest_state(webui_engine) == (both, edition) and removals(webui_engine) == []

    removed = curator.post(REMOVE, data=form(curator, edition=edition))
    assert removed.status_code == 302 and removed.headers["Location"] == PAGE
    shown = curator.get(PAGE).get_data(as_text=True)
    assert "Configuration dr.dk/defaultconfig removed from harvest sel." in shown
    assert f'action="{REMOVE}"' not in shown and page.count(">Remove</button>") == 2
    assert harvest_state(webui_engine) == ([("kb.dk", "defaultconfig")], edition + 1)
    assert removals(webui_engine) == [("curator", "delete")]
    gone = curator.post(REMOVE, data=form(curator, edition=edition + 1))
    assert gone.status_code == 404 and "dr.dk/defaultconfig" in gone.get_data(as_text=True)
