"""The edition a change was read at is required wherever the API's description lists it as required, and by
the pages' forms: a request without it is refused naming ``edition`` (400), never taken for a stale edition
nor applied to whatever the object is now. On a real SQLite harvest database."""

from __future__ import annotations

import re

from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository

# a value of each path parameter that names an object made below
PATH_VALUES = {"name": "kb.dk", "listname": "defaultseeds", "config": "defaultconfig", "domain": "kb.dk",
               "configuration": "defaultconfig", "webhook_id": "1", "job_id": "1"}
OBJECT_OF_PREFIX = {"/harvests/": "culture", "/schedules/": "Once_a_day", "/templates/": "default_orderxml",
                    "/users/": "curator"}


def path_of(template: str) -> str:
    path = template
    for prefix, name in OBJECT_OF_PREFIX.items():
        if template.startswith(prefix):
            path = path.replace("{name}", name, 1)
    return "/api/v1" + re.sub(r"\{(\w+)\}", lambda match: PATH_VALUES[match.group(1)], path)


def test_every_route_whose_description_requires_the_edition_refuses_a_body_without_it(api, webui_engine):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("kb.dk")
        harvests = HarvestRepository(conn)
        created = harvests.create_selective("culture", "Once_a_day")
        harvests.add_configurations("culture", [("kb.dk", None)], created.edition)
        seeds = SeedListRepository(conn).get("kb.dk", "defaultseeds").seeds
    paths = api("admin", "get", "/api/v1/openapi.json").get_json()["paths"]
    checked = []
    for template, operations in paths.items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if "edition" not in body.get("required", []):
                continue
            response = api("admin", method, path_of(template), json={})
            error = response.get_json()["error"]
            assert response.status_code == 400 and error["field"] == "edition", (method, template, error)
            assert error["message"] == "edition is required", (method, template, error)
            checked.append(f"{method.upper()} {template}")
    assert {"PATCH /domains/{name}/seedlists/{listname}", "PATCH /domains/{name}",
            "PATCH /domains/{name}/configurations/{config}", "PATCH /harvests/{name}", "POST /harvests/{name}/seeds",
            "PATCH /schedules/{name}", "PATCH /templates/{name}"} <= set(checked)
    with webui_engine.connect() as conn:
        assert SeedListRepository(conn).get("kb.dk", "defaultseeds").seeds == seeds


def test_a_form_without_its_edition_is_refused_naming_it(login, webui_engine):
    with webui_engine.begin() as conn:
        domain = DomainRepository(conn).create("kb.dk")
        harvests = HarvestRepository(conn)
        created = harvests.create_selective("culture", "Once_a_day")
        harvests.add_configurations("culture", [("kb.dk", None)], created.edition)
        seeds = SeedListRepository(conn).get("kb.dk", "defaultseeds").seeds
    curator = login("curator")
    saved = curator.post("/definitions/domains/kb.dk/seedlists/defaultseeds", follow_redirects=True,
                         data={"csrf_token": curator.csrf, "seeds": "http://kb.dk/other"})
    text = saved.get_data(as_text=True)
    assert "Edition: is required: the form was sent without the edition it was read at" in text
    assert "somebody else" not in text
    removed = curator.post("/definitions/harvests/culture/configurations/kb.dk/defaultconfig/remove",
                           data={"csrf_token": curator.csrf})
    assert removed.status_code == 400 and "Edition: is required" in removed.get_data(as_text=True)
    with webui_engine.connect() as conn:
        assert SeedListRepository(conn).get("kb.dk", "defaultseeds").seeds == seeds
        assert DomainRepository(conn).get("kb.dk").edition == domain.edition
        assert [entry.domain_name for entry in HarvestRepository(conn).configurations("culture")] == ["kb.dk"]
