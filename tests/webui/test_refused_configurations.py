"""Every configuration or seed list a request names that does not exist is named, with its line and why, as
refused seeds are: through the API (400, the error's ``lines``) and on the pages (the form again with what
was typed, and the refused lines under it). Nothing of such a request is stored. On SQLite."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository


def make_domains(engine: Any, *names: str) -> None:
    with engine.begin() as conn:
        for name in names:
            DomainRepository(conn).create(name)


def harvest_count(engine: Any) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.harvestdefinitions))


def refused_lines(response: Any) -> list[tuple[int, str, str]]:
    error = response.get_json()["error"]
    assert response.status_code == 400 and error["field"] == "configurations", error
    assert error["refused"] == len(error["lines"])
    return [(line["line"], line["text"], line["reason"]) for line in error["lines"]]


def page_refusals(html: str) -> list[tuple[str, str, str]]:
    section = html.split('id="refused-lines"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<td class="number">(\d+)</td><td><code>([^<]*)</code></td><td class="error-message">([^<]*)'
                      r'</td>', section)


def test_a_new_harvest_names_every_configuration_that_does_not_exist(api, webui_engine):
    make_domains(webui_engine, "kb.dk", "dr.dk")
    before = harvest_count(webui_engine)
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "culture", "schedule": "Once_a_day", "configurations": [
            {"domain": "kb.dk", "configuration": "langsom"}, {"domain": "dr.dk"},
            {"domain": "dr.dk", "configuration": "hurtig"}, {"domain": "nosuch.dk", "configuration": None}]})
    assert refused_lines(response) == [
        (1, "kb.dk/langsom", "domain kb.dk has no configuration langsom"),
        (3, "dr.dk/hurtig", "domain dr.dk has no configuration hurtig"),
        (4, "nosuch.dk", "no domain nosuch.dk")]
    assert response.get_json()["error"]["message"].startswith("configurations of harvest culture: 3 lines refused")
    assert harvest_count(webui_engine) == before

    malformed = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "culture", "schedule": "Once_a_day", "configurations": [
            {"domain": 5}, {"domain": "kb.dk"}, "kb.dk", {"domain": "kb.dk", "configuration": 7}]})
    assert [(line, text) for line, text, _reason in refused_lines(malformed)] == [
        (1, '{"domain": 5}'), (3, '"kb.dk"'), (4, '{"configuration": 7, "domain": "kb.dk"}')]  # as sent: keys sorted
    assert harvest_count(webui_engine) == before


def test_configurations_added_to_a_harvest_are_named_every_one(api, webui_engine):
    make_domains(webui_engine, "kb.dk")
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "culture", "schedule": "Once_a_day"}).get_json()
    response = api("curator", "patch", "/api/v1/harvests/culture", json={
        "edition": created["edition"], "configurations": [
            {"domain": "kb.dk", "configuration": "a"}, {"domain": "kb.dk", "configuration": "b"}]})
    assert [line for line, _text, _reason in refused_lines(response)] == [1, 2]
    assert api("archivist", "get", "/api/v1/harvests/culture").get_json()["configurations"] == []


def test_a_configuration_names_every_seed_list_its_domain_does_not_have(api, webui_engine):
    make_domains(webui_engine, "kb.dk")
    response = api("curator", "post", "/api/v1/domains/kb.dk/configurations", json={
        "name": "deep", "template": "default_orderxml", "seedlists": ["news", "defaultseeds", "sport"]})
    error = response.get_json()["error"]
    assert response.status_code == 400 and error["field"] == "seedlists"
    assert [(line["line"], line["reason"]) for line in error["lines"]] == [
        (1, "domain kb.dk has no seed list news"), (3, "domain kb.dk has no seed list sport")]
    names = [c["name"] for c in api("curator", "get", "/api/v1/domains/kb.dk/configurations").get_json()["items"]]
    assert names == ["defaultconfig"]


def test_the_new_harvest_form_lists_every_refused_line_by_its_line_number(login, webui_engine):
    make_domains(webui_engine, "kb.dk")
    curator = login("curator")
    typed = "kb.dk/langsom\n\nkb.dk\n   \nnosuch.dk\nkb.dk/hurtig"
    response = curator.post("/definitions/harvests/new/selective", data={
        "csrf_token": curator.csrf, "name": "culture", "schedule": "Once_a_day", "configurations": typed})
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert page_refusals(html) == [("1", "kb.dk/langsom", "domain kb.dk has no configuration langsom"),
                                   ("5", "nosuch.dk", "no domain nosuch.dk"),
                                   ("6", "kb.dk/hurtig", "domain kb.dk has no configuration hurtig")]
    assert "configurations of harvest culture: 3 lines refused, nothing was stored" in html
    assert re.search(r'<textarea name="configurations"[^>]*>' + re.escape(typed) + "</textarea>", html), html
    with webui_engine.connect() as conn:
        assert [h.name for h in HarvestRepository(conn).all_harvests()] == []


def test_the_harvest_page_lists_every_domain_it_could_not_add(login, webui_engine):
    make_domains(webui_engine, "kb.dk")
    with webui_engine.begin() as conn:
        edition = HarvestRepository(conn).create_selective("culture", "Once_a_day").edition
    curator = login("curator")
    typed = "kb.dk\nkb.dk/a\n\nb.dk"
    response = curator.post("/definitions/harvests/culture", data={
        "csrf_token": curator.csrf, "edition": edition, "name": "culture", "schedule": "Once_a_day",
        "configurations": typed})
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert page_refusals(html) == [("2", "kb.dk/a", "domain kb.dk has no configuration a"),
                                   ("4", "b.dk", "no domain b.dk")]
    assert re.search(r'<textarea name="configurations"[^>]*>' + re.escape(typed) + "</textarea>", html), html
    with webui_engine.connect() as conn:
        assert list(HarvestRepository(conn).configurations("culture")) == []
        assert HarvestRepository(conn).get("culture").edition == edition
