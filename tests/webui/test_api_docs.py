"""The API described for people: ``/api/v1/`` names the description and its page, ``/api/v1/docs`` renders
the description with Swagger UI served from the installed package (nothing from another origin), and every
page's footer links to it; in Debian's chromium, the page lists every operation of the description and
"Try it out" calls the API with the logged-in session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.conftest import ROLES

DOCS = "/api/v1/docs"
# every src and href of a page (the docs page has no srcset, no inline style with url())
REFERENCE = re.compile(r'\b(?:src|href)="([^"]*)"')


def test_the_api_index_names_the_description_and_its_page(api, app, login):
    index = api("archivist", "get", "/api/v1/")
    assert index.status_code == 200 and index.is_json
    assert index.json["description"] == "/api/v1/openapi.json" and index.json["docs"] == DOCS
    assert api("archivist", "get", index.json["description"]).json["openapi"] == "3.1.0"
    assert login("archivist").get(index.json["docs"]).status_code == 200
    resources = {resource["name"]: resource for resource in index.json["resources"]}
    assert {"domains", "harvests", "schedules", "templates", "jobs", "traps", "channels", "users", "webhooks",
            "running-jobs", "waiting-harvests"} <= set(resources)
    assert resources["harvests"]["url"] == "/api/v1/harvests"
    assert resources["harvests"]["summary"].startswith("Harvest definitions by name")
    assert "openapi.json" not in resources and "" not in resources
    for resource in index.json["resources"]:  # every link answers, and none needs a parameter
        assert not re.search(r"[<{]", resource["url"]) and resource["summary"], resource
        assert api("admin", "get", resource["url"]).status_code == 200, resource["url"]
    anonymous = app.test_client().get("/api/v1/")
    assert anonymous.status_code == 401 and anonymous.get_json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("role", ROLES)
def test_the_docs_page_is_served_with_its_assets_and_nothing_from_elsewhere(login, role):
    client = login(role)
    page = client.get(DOCS)
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert not re.search(r"https?:|//[a-z0-9]", html, re.I), "the API page names another origin"
    references = REFERENCE.findall(html)
    assert references and all(ref.startswith("/") and not ref.startswith("//") for ref in references), references
    scripts = re.findall(r'<script src="([^"]+)"', html)
    sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    assert any("/api/v1/docs/assets/swagger-ui-bundle.js" in s for s in scripts)
    assert any("/api/v1/docs/assets/swagger-ui.css" in s for s in sheets)
    for reference in scripts + sheets:
        asset = client.get(reference)
        assert asset.status_code == 200, reference
        assert asset.mimetype in ("text/javascript", "application/javascript", "text/css"), (reference, asset.mimetype)
        assert len(asset.get_data()) > 100, reference
    bundle = client.get(next(s for s in scripts if "swagger-ui-bundle" in s)).get_data(as_text=True)
    assert "SwaggerUIBundle" in bundle
    assert 'data-description="/api/v1/openapi.json"' in html and f"as you, {role} ({role})" in html


def test_the_docs_page_is_a_page_a_login_form_guards(app, login):
    anonymous = app.test_client()
    for path in (DOCS, f"{DOCS}/assets/swagger-ui.css"):
        answer = anonymous.get(path)
        assert answer.status_code == 302 and answer.headers["Location"] == f"/login?next={path}", path
    client = login("curator")
    for name in ("index.css", "swagger-ui.js", "..%2F..%2Fdist%2Fswagger-ui.css", "nosuch.js"):
        refused = client.get(f"{DOCS}/assets/{name}")
        assert refused.status_code == 404 and refused.mimetype == "text/html", name


def test_every_page_links_the_api_page_in_its_footer_and_the_login_page_says_how_to_get_a_token(app, login):
    footer = re.compile(r'<footer class="bottom">\s*<a href="/api/v1/docs">API</a>')
    client = login("operator")
    for path in ("/", "/definitions/", "/status/", "/status/running", "/history/", "/system/", DOCS):
        page = client.get(path)
        assert page.status_code == 200 and footer.search(page.get_data(as_text=True)), path
    # the API page needs a login, so the login page links no page that would lead back to it
    login_page = app.test_client().get("/login").get_data(as_text=True)
    assert "/api/v1/docs" not in login_page and "make one on your API tokens page" in login_page


def test_the_description_lists_the_api_not_its_page_and_groups_the_routes(api):
    document = api("archivist", "get", "/api/v1/openapi.json").json
    assert "/" in document["paths"] and not [path for path in document["paths"] if path.startswith("/docs")]
    tags = [tag["name"] for tag in document["tags"]]
    operations = [op for methods in document["paths"].values() for op in methods.values()]
    assert all(len(op["tags"]) == 1 for op in operations)
    assert {op["tags"][0] for op in operations} <= set(tags) | {path.strip("/").split("/")[0]
                                                               for path in document["paths"]}
    assert document["paths"]["/running-jobs"]["get"]["tags"] == ["Harvest status"]
    assert document["paths"]["/traps/{name}"]["get"]["tags"] == ["Harvest definitions"]
    users = document["paths"]["/users"]["get"]
    assert users["description"].startswith("**Roles:** admin (the admin permission).")
    assert "``" not in users["summary"]


# ---------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedWebui]:
    with ServedWebui(tmp_path_factory.mktemp("webui"), users=("archivist",)) as webui:
        yield webui


@pytest.mark.timeout(300)
def test_the_api_page_renders_every_route_and_tries_one_as_the_user(browser: Any, served: ServedWebui,
                                                                      tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=served.url)
    context.set_default_timeout(20_000)
    page = context.new_page()
    origins: set[str] = set()
    page.on("request", lambda request: origins.add(urlsplit(request.url).netloc))
    try:
        log_in(page, served.url, "archivist")
        page.locator("footer.bottom").get_by_role("link", name="API").click()
        page.wait_for_url(f"{served.url}{DOCS}")
        page.locator(".swagger-ui .opblock").first.wait_for()
        document = page.request.get(f"{served.url}/api/v1/openapi.json").json()
        operations = {(method.upper(), path) for path, methods in document["paths"].items() for method in methods}
        shown = set()
        for block in page.locator(".swagger-ui .opblock").all():
            shown.add((block.locator(".opblock-summary-method").inner_text().strip(),
                       block.locator(".opblock-summary-path").get_attribute("data-path")))
        assert shown == operations
        for path in ("/running-jobs", "/waiting-harvests", "/channels", "/channel-mapping", "/traps",
                     "/harvests/{name}/seeds", "/jobs/{job_id}/crawllog"):
            assert ("GET", path) in shown, path
        assert page.get_by_role("heading", name="Harvest status").is_visible()
        screenshot(page, tmp_path, "api-docs")

        running = page.locator('.opblock-get:has(.opblock-summary-path[data-path="/running-jobs"])')
        running.locator(".opblock-summary").click()
        assert "Roles:" in running.locator(".opblock-description-wrapper").inner_text()
        running.get_by_role("button", name="Try it out").click()
        running.get_by_role("button", name="Execute").click()
        body = running.locator(".live-responses-table .response-col_description pre").first
        body.wait_for()
        assert '"items": []' in body.inner_text() and '"next": null' in body.inner_text()
        assert running.locator(".live-responses-table tbody td.response-col_status").first.inner_text().strip() == "200"
        screenshot(page, tmp_path, "api-docs-try-it-out")
        assert origins == {urlsplit(served.url).netloc}, f"the page reached out to {origins}"
    finally:
        context.close()
