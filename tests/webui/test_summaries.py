"""The overviews of the definitions: alias summary, domains per TLD, unused configurations and seed lists,
as pages and through the API, each walked page by page with its cursor."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import update

from harvestdef.db import schema as s

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


def create(api, *names: str) -> None:
    answer = api("curator", "post", "/api/v1/domains", json={"names": list(names)})
    assert answer.status_code == 201, answer.get_json()


def make_alias(api, alias: str, target: str) -> None:
    edition = api("curator", "get", f"/api/v1/domains/{alias}").json["edition"]
    answer = api("curator", "patch", f"/api/v1/domains/{alias}", json={"edition": edition, "alias": target})
    assert answer.status_code == 200, answer.get_json()


def walk(api, path: str, size: int = 1) -> list[dict]:
    """Every item of a list, fetched ``size`` at a time by following ``next``."""
    items, cursor = [], None
    while True:
        answer = api("archivist", "get", path, query_string={"limit": size, **({"after": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.get_json()
        items += answer.json["items"]
        cursor = answer.json["next"]
        if cursor is None:
            return items


def test_the_alias_summary_lists_aliases_by_target_and_marks_expired_ones(api, login, webui_engine):
    create(api, "kb.dk", "kglbib.dk", "royallibrary.dk", "sb.dk", "statsbiblioteket.dk")
    make_alias(api, "royallibrary.dk", "kb.dk")
    make_alias(api, "kglbib.dk", "kb.dk")
    make_alias(api, "statsbiblioteket.dk", "sb.dk")
    with webui_engine.begin() as conn:
        conn.execute(update(s.domains).where(s.domains.c.name == "kglbib.dk").values(lastaliasupdate=LONG_AGO))
    items = walk(api, "/api/v1/aliases")
    assert [(i["alias_of"], i["domain"], i["expired"]) for i in items] == [
        ("kb.dk", "kglbib.dk", True), ("kb.dk", "royallibrary.dk", False), ("sb.dk", "statsbiblioteket.dk", False)]
    expired = items[0]
    assert expired["confirmed"] == "2020-01-01T00:00:00Z"
    assert datetime.fromisoformat(expired["expires"]) > LONG_AGO
    page = login("archivist").get("/definitions/aliases").get_data(as_text=True)
    assert "kglbib.dk" in page and "statsbiblioteket.dk" in page
    assert page.count('class="status FAILED">expired') == 1


def test_domains_per_tld_through_the_api_and_the_page(api, login):
    create(api, "kb.dk", "sb.dk", "example.com", "bbc.co.uk", "10.1.2.3")
    assert walk(api, "/api/v1/tlds", size=2) == [
        {"tld": "(IP address)", "domains": 1}, {"tld": "com", "domains": 1}, {"tld": "dk", "domains": 2},
        {"tld": "uk", "domains": 1}]
    page = login("curator").get("/definitions/tlds").get_data(as_text=True)
    assert "<td>dk</td><td class=\"number\">2</td>" in page


def test_unused_configurations_and_seed_lists_with_counts(api, login):
    create(api, "kb.dk", "sb.dk")
    for domain in ("kb.dk", "sb.dk"):
        answer = api("curator", "post", f"/api/v1/domains/{domain}/seedlists",
                     json={"name": "spare", "seeds": [f"http://{domain}/spare"]})
        assert answer.status_code == 201, answer.get_json()
    answer = api("curator", "post", "/api/v1/domains/kb.dk/configurations",
                 json={"name": "deep", "template": "default_orderxml", "seedlists": ["defaultseeds"]})
    assert answer.status_code == 201, answer.get_json()
    assert api("archivist", "get", "/api/v1/unused").json == {"configurations": 1, "seedlists": 2}
    assert walk(api, "/api/v1/unused/configurations") == [
        {"domain": "kb.dk", "configuration": "deep", "template": "default_orderxml"}]
    assert walk(api, "/api/v1/unused/seedlists") == [{"domain": "kb.dk", "seedlist": "spare"},
                                                     {"domain": "sb.dk", "seedlist": "spare"}]
    client = login("operator")
    page = client.get("/definitions/unused/seedlists").get_data(as_text=True)
    assert "Configurations (1)" in page and "Seed lists (2)" in page
    assert "/definitions/domains/sb.dk/seedlists/spare" in page
    page = client.get("/definitions/unused/configurations").get_data(as_text=True)
    assert "/definitions/domains/kb.dk/configurations/deep" in page
    missing = client.get("/definitions/unused/harvests")
    assert missing.status_code == 404 and "configurations or seedlists" in missing.get_data(as_text=True)


def test_a_cursor_from_another_list_is_refused_naming_after(api):
    create(api, "kb.dk")
    cursor = api("archivist", "get", "/api/v1/domains", query_string={"q": "*", "limit": 1}).json
    for path in ("/api/v1/aliases", "/api/v1/tlds", "/api/v1/unused/configurations", "/api/v1/unused/seedlists"):
        answer = api("archivist", "get", path, query_string={"after": "bm90LWpzb24"})
        assert answer.status_code == 400 and answer.json["error"]["field"] == "after", path
    assert cursor["next"] is None
    answer = api("archivist", "get", "/api/v1/unused/seedlists", query_string={"after": "WyJrYi5kayJd"})  # ["kb.dk"]
    assert answer.status_code == 400 and "not a cursor" in answer.json["error"]["message"]


def test_openapi_describes_the_overviews_with_their_permission(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").json["paths"]
    for path in ("/aliases", "/tlds", "/unused", "/unused/configurations", "/unused/seedlists"):
        assert paths[path]["get"]["x-permission"] == "read", path
    assert paths["/jobs/{job_id}/restart"]["post"]["x-roles"] == ["admin", "operator"]


def test_every_api_route_but_its_description_names_its_permission(app):
    from webui.auth import PERMISSIONS
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/") or rule.rule == "/api/v1/openapi.json":
            continue
        permission = getattr(app.view_functions[rule.endpoint], "permission", None)
        assert permission in PERMISSIONS, f"{rule.rule} has no permission of PERMISSIONS"


def test_the_definitions_page_links_the_overviews(login):
    page = login("archivist").get("/definitions/").get_data(as_text=True)
    for path in ("/definitions/aliases", "/definitions/tlds", "/definitions/unused/configurations",
                 "/definitions/unused/seedlists"):
        assert path in page
