"""Domains through the API and the Definitions pages: creation (one, many, a file), all or nothing,
search with keyset paging, editing with editions, seed lists, configurations, deactivation (left out of
snapshots) and deletion (refused while history refers to the domain), permissions and CSRF."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from harvestdef.db import schema as s
from harvestdef.errors import StaleEditionError
from harvestdef.model.definitions import ExtendedFieldDatatype, ExtendedFieldType
from harvestdef.model.status import StopReason
from harvestdef.repositories.domains import DomainRepository, like_prefix, wildcard_to_like
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from tests.scheduler.factories import T0, add_history, make_selective, make_snapshot

SCRIPT = '<script>alert("x")</script>'


def domain_count(engine) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.domains))


def domain_row(engine, name):
    with engine.connect() as conn:
        return conn.execute(select(s.domains).where(s.domains.c.name == name)).mappings().first()


def create(api, *names):
    response = api("curator", "post", "/api/v1/domains", json={"names": list(names)})
    assert response.status_code in (200, 201), response.get_json()
    return response.get_json()


# ------------------------------------------------------------------ API: creating and reading
def test_post_creates_all_names_or_none(api, webui_engine):
    response = api("curator", "post", "/api/v1/domains",
                   json={"names": ["kb.dk", "www.dr.dk", "not a domain", "økologi.dk", "co.uk", "KB.dk"]})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["field"] == "names" and error["refused"] == 2
    assert [(line["line"], line["text"]) for line in error["lines"]] == [(3, "not a domain"), (5, "co.uk")]
    assert "public suffix" in error["lines"][1]["reason"]
    assert domain_count(webui_engine) == 0
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk", 7]}).status_code == 400
    data = create(api, "kb.dk", "www.dr.dk", "økologi.dk", "KB.dk")
    assert data == {"created": ["kb.dk", "dr.dk", "økologi.dk"], "existing": [],
                    "notes": ["www.dr.dk was taken as dr.dk"]}
    assert domain_count(webui_engine) == 3
    again = create(api, "kb.dk")
    assert again == {"created": [], "existing": ["kb.dk"], "notes": []}
    # every new domain has its default configuration and seed list
    configurations = api("archivist", "get", "/api/v1/domains/kb.dk/configurations").get_json()
    assert [c["name"] for c in configurations["items"]] == ["defaultconfig"]
    assert configurations["items"][0]["seedlists"] == ["defaultseeds"] and configurations["items"][0]["default"]


def test_post_needs_a_list_of_names(api, webui_engine):
    for payload in ({}, {"names": "kb.dk"}, None):
        response = api("curator", "post", "/api/v1/domains", json=payload)
        assert response.status_code == 400
        assert response.get_json()["error"]["code"] == "invalid"
    assert domain_count(webui_engine) == 0


def test_get_domain_by_unicode_or_punycode(api):
    # økologi.dk's punycode is xn--kologi-9xa.dk (xn--kologi-wua.dk, easily taken for it, is kçologi.dk's).
    create(api, "økologi.dk")
    for name in ("økologi.dk", "xn--kologi-9xa.dk", "XN--KOLOGI-9XA.DK"):
        response = api("operator", "get", f"/api/v1/domains/{name}")
        assert response.status_code == 200
        data = response.get_json()
        assert data["name"] == "økologi.dk" and data["punycode"] == "xn--kologi-9xa.dk"
        assert data["active"] is True and data["edition"] == 1
    found = api("archivist", "get", "/api/v1/domains?q=xn--kologi-9xa.dk").get_json()
    assert [item["name"] for item in found["items"]] == ["økologi.dk"]
    assert api("curator", "get", "/api/v1/domains/nosuch.dk").status_code == 404
    assert api("curator", "get", "/api/v1/domains/nosuch.dk").get_json()["error"]["code"] == "not_found"


def test_paging_walks_every_domain_once(api):
    names = [f"site{number:03d}.dk" for number in range(120)]
    assert len(create(api, *names)["created"]) == 120
    seen: list[str] = []
    path = "/api/v1/domains?q=site*&limit=25"
    pages = 0
    while True:
        data = api("archivist", "get", path).get_json()
        seen += [item["name"] for item in data["items"]]
        pages += 1
        if data["next"] is None:
            break
        path = f"/api/v1/domains?q=site*&limit=25&after={data['next']}"
    assert seen == sorted(names) and pages == 5


def test_search_wildcards_traps_and_comments(api):
    create(api, "abc.dk", "abcd.dk", "xabc.dk", "abc.se")
    def names(query):
        return [item["name"] for item in api("curator", "get", f"/api/v1/domains?{query}").get_json()["items"]]
    assert names("q=abc*") == ["abc.dk", "abc.se", "abcd.dk"]
    assert names("q=*abc.dk") == ["abc.dk", "xabc.dk"]
    assert names("q=abc*.dk") == ["abc.dk", "abcd.dk"]
    assert names("q=a_c*") == []  # '_' is no LIKE wildcard here
    domain = api("curator", "get", "/api/v1/domains/abc.se").get_json()
    api("curator", "patch", "/api/v1/domains/abc.se",
        json={"edition": domain["edition"], "comments": "Swedish news", "crawler_traps": [r".*/calendar/.*"]})
    assert names("q=swedish&field=comments") == ["abc.se"] == names("q=SWEDISH&field=comments")
    assert names("q=calendar&field=crawlertraps") == ["abc.se"]
    response = api("curator", "get", "/api/v1/domains?q=x&field=password")
    assert response.status_code == 400
    assert api("curator", "get", "/api/v1/domains?after=%%%").status_code == 400


def test_prefix_is_an_index_range():
    assert like_prefix(wildcard_to_like("abc*")) == "abc"
    assert like_prefix(wildcard_to_like("a_c*")) == "a_c"
    assert like_prefix(wildcard_to_like("*.dk")) == ""


def test_prefix_search_uses_the_name_index(webui_engine):
    with webui_engine.connect() as conn:
        clauses = DomainRepository(conn)._name_clauses("abc*")
        statement = select(s.domains.c.name).where(*clauses).order_by(s.domains.c.name)
        compiled = statement.compile(webui_engine, compile_kwargs={"literal_binds": True})
        plan = " ".join(str(row) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}"))
    assert "SEARCH domains USING" in plan and "(name>? AND name<?)" in plan


# ------------------------------------------------------------------ API: editing
def test_patch_changes_and_stale_edition_is_refused(api, webui_engine):
    create(api, "kb.dk", "statsbiblioteket.dk")
    response = api("curator", "patch", "/api/v1/domains/kb.dk",
                   json={"edition": 1, "comments": "The Royal Library", "crawler_traps": [".*/login.*"],
                         "alias": "statsbiblioteket.dk"})
    assert response.status_code == 200, response.get_json()
    data = response.get_json()
    assert data["edition"] == 2 and data["alias"] == "statsbiblioteket.dk" and data["alias_confirmed"]
    assert data["crawler_traps"] == [".*/login.*"] and data["comments"] == "The Royal Library"
    stale = api("admin", "patch", "/api/v1/domains/kb.dk", json={"edition": 1, "comments": "overwritten"})
    assert stale.status_code == 409 and stale.get_json()["error"]["code"] == "conflict"
    assert domain_row(webui_engine, "kb.dk")["comments"] == "The Royal Library"
    cleared = api("admin", "patch", "/api/v1/domains/kb.dk", json={"edition": 2, "alias": None, "active": False})
    assert cleared.get_json()["alias"] is None and cleared.get_json()["active"] is False


def test_patch_is_all_or_nothing(api, webui_engine):
    create(api, "kb.dk")
    response = api("curator", "patch", "/api/v1/domains/kb.dk",
                   json={"edition": 1, "comments": "kept?", "crawler_traps": ["(unclosed"]})
    assert response.status_code == 400
    row = domain_row(webui_engine, "kb.dk")
    assert row["comments"] == "" and row["edition"] == 1
    assert api("curator", "patch", "/api/v1/domains/kb.dk", json={"comments": "x"}).status_code == 400
    assert api("curator", "patch", "/api/v1/domains/kb.dk",
               json={"edition": 1, "alias": "kb.dk"}).status_code == 400


def test_archivist_and_operator_may_not_write(api, webui_engine):
    create(api, "kb.dk")
    for role in ("archivist", "operator"):
        response = api(role, "post", "/api/v1/domains", json={"names": ["dr.dk"]})
        assert response.status_code == 403
        assert "may not curate" in response.get_json()["error"]["message"]
        assert api(role, "patch", "/api/v1/domains/kb.dk", json={"edition": 1, "comments": "x"}).status_code == 403
        assert api(role, "post", "/api/v1/domains/kb.dk/seedlists",
                   json={"name": "x", "seeds": ["http://kb.dk/"]}).status_code == 403
    assert domain_count(webui_engine) == 1 and domain_row(webui_engine, "kb.dk")["comments"] == ""


def test_seedlists_and_configurations(api):
    create(api, "kb.dk")
    response = api("curator", "post", "/api/v1/domains/kb.dk/seedlists",
                   json={"name": "news", "seeds": ["http://kb.dk/news", " http://kb.dk/news ", "https://www.kb.dk/"]})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["seeds"] == ["http://kb.dk/news", "https://www.kb.dk/"]
    bad = api("curator", "post", "/api/v1/domains/kb.dk/seedlists", json={"name": "bad", "seeds": ["http://"]})
    assert bad.status_code == 400
    assert bad.get_json()["error"]["lines"] == [{"line": 1, "text": "http://", "reason": "not a URL: no host"}]
    duplicate = api("curator", "post", "/api/v1/domains/kb.dk/seedlists", json={"name": "news", "seeds": ["kb.dk"]})
    assert duplicate.status_code == 409
    lists = api("archivist", "get", "/api/v1/domains/kb.dk/seedlists").get_json()
    assert [item["name"] for item in lists["items"]] == ["defaultseeds", "news"] and lists["next"] is None
    response = api("curator", "post", "/api/v1/domains/kb.dk/configurations",
                   json={"name": "deep", "template": "default_orderxml", "seedlists": ["news"],
                         "max_objects": 5000, "max_bytes": -1})
    assert response.status_code == 201, response.get_json()
    assert response.get_json() | {"comments": ""} == {
        "name": "deep", "comments": "", "template": "default_orderxml", "seedlists": ["news"],
        "max_objects": 5000, "max_bytes": -1, "max_rate": None, "default": False,
        "crawl_attributes": {"max_hops": 20, "honor_robots_dot_txt": False, "extract_javascript": True}}
    for payload, status in (({"name": "x", "template": "nosuch", "seedlists": ["news"]}, 404),
                            ({"name": "x", "template": "default_orderxml", "seedlists": ["nosuch"]}, 400),
                            ({"name": "x", "template": "default_orderxml", "seedlists": ["news"],
                              "max_bytes": -5}, 400),
                            ({"name": "x", "template": "default_orderxml", "seedlists": ["news"],
                              "edition": 1}, 409)):
        assert api("curator", "post", "/api/v1/domains/kb.dk/configurations", json=payload).status_code == status
    names = [c["name"] for c in api("curator", "get", "/api/v1/domains/kb.dk/configurations").get_json()["items"]]
    assert names == ["deep", "defaultconfig"]


# ------------------------------------------------------------------ deactivation and deletion
def test_deactivated_domain_is_left_out_of_a_snapshot(api, webui_engine):
    create(api, "kb.dk", "dr.dk", "tv2.dk")
    assert api("curator", "patch", "/api/v1/domains/dr.dk", json={"edition": 1, "active": False}).status_code == 200
    with webui_engine.begin() as conn:
        make_snapshot(conn, 7, "broad")
    generate_jobs(webui_engine, "broad", GenerationOptions(next_job_id=100), T0 + timedelta(days=1))
    with webui_engine.connect() as conn:
        harvested = set(conn.scalars(
            select(s.domains.c.name).join(s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id)
            .join(s.job_configs, s.job_configs.c.config_id == s.configurations.c.config_id)))
    assert harvested == {"kb.dk", "tv2.dk"}
    assert api("curator", "get", "/api/v1/domains/dr.dk").get_json()["active"] is False


def test_deactivated_domain_is_left_out_of_a_continuation_snapshot(api, webui_engine):
    create(api, "kb.dk", "dr.dk")
    with webui_engine.begin() as conn:
        make_snapshot(conn, 7, "first", maxbytes=1000)
        make_snapshot(conn, 8, "second", previous=7)
        for name in ("kb.dk", "dr.dk"):
            config_id = conn.scalar(select(s.domains.c.defaultconfig).where(s.domains.c.name == name))
            add_history(conn, config_id, 7, 10, 1000, StopReason.SIZE_LIMIT)
    assert api("admin", "patch", "/api/v1/domains/kb.dk", json={"edition": 1, "active": False}).status_code == 200
    generate_jobs(webui_engine, "second", GenerationOptions(next_job_id=200), T0 + timedelta(days=1))
    with webui_engine.connect() as conn:
        harvested = set(conn.scalars(
            select(s.domains.c.name).join(s.configurations, s.configurations.c.domain_id == s.domains.c.domain_id)
            .join(s.job_configs, s.job_configs.c.config_id == s.configurations.c.config_id)))
    assert harvested == {"dr.dk"}


def test_delete_refused_with_history_allowed_without(login, webui_engine, api):
    create(api, "kb.dk", "dr.dk", "tv2.dk")
    with webui_engine.begin() as conn:
        make_snapshot(conn, 7, "broad")
        config_id = conn.scalar(select(s.domains.c.defaultconfig).where(s.domains.c.name == "kb.dk"))
        add_history(conn, config_id, 7, 10, 1000, StopReason.DOWNLOAD_COMPLETE)
        selected = conn.scalar(select(s.domains.c.defaultconfig).where(s.domains.c.name == "tv2.dk"))
        make_selective(conn, 8, "news", [selected])
    client = login("curator")
    response = client.post("/definitions/domains/kb.dk/delete", data={"csrf_token": client.csrf, "edition": 1},
                           follow_redirects=True)
    assert "cannot be deleted: harvest history" in response.get_data(as_text=True)
    assert domain_row(webui_engine, "kb.dk") is not None
    page = client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert "it has harvest history" in page and "Delete domain" not in page
    response = client.post("/definitions/domains/tv2.dk/delete", data={"csrf_token": client.csrf, "edition": 1},
                           follow_redirects=True)
    assert "harvest definitions refer to it" in response.get_data(as_text=True)
    assert domain_row(webui_engine, "tv2.dk") is not None
    response = client.post("/definitions/domains/dr.dk/delete", data={"csrf_token": client.csrf, "edition": 1})
    assert response.status_code == 302 and response.headers["Location"].endswith("/definitions/domains")
    assert domain_row(webui_engine, "dr.dk") is None
    with webui_engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.configurations)) == 2
        assert conn.scalar(select(func.count()).select_from(s.seedlists)) == 2
        actions = list(conn.scalars(select(s.audit_log.c.action).where(s.audit_log.c.tablename == "domains",
                                                                       s.audit_log.c.action == "delete")))
    assert actions == ["delete"]
    assert client.get("/definitions/domains/dr.dk").status_code == 404


# ------------------------------------------------------------------ pages
def test_definitions_index_and_search_pages(login, api):
    create(api, *(f"page{number:02d}.dk" for number in range(30)))
    client = login("archivist")
    index = client.get("/definitions/")
    assert index.status_code == 200 and "Find domains" in index.get_data(as_text=True)
    assert "Create domains" not in index.get_data(as_text=True)
    first = client.get("/definitions/domains?q=page*&limit=20").get_data(as_text=True)
    assert "page00.dk" in first
    following = re.search(r'href="([^"]+after=[^"]+)"', first)
    assert following, "no next page link"
    second = client.get(following.group(1).replace("&amp;", "&")).get_data(as_text=True)
    assert "Next page" not in second
    shown = set(re.findall(r">(page\d\d\.dk)<", first)) | set(re.findall(r">(page\d\d\.dk)<", second))
    assert set(re.findall(r">(page\d\d\.dk)<", first)).isdisjoint(re.findall(r">(page\d\d\.dk)<", second))
    assert len(shown) == 30
    assert "No domains match" in client.get("/definitions/domains?q=nothing*").get_data(as_text=True)


def test_create_page_one_list_and_errors_per_line(login, webui_engine):
    client = login("curator")
    assert 'name="csrf_token"' in client.get("/definitions/domains/new").get_data(as_text=True)
    names = "dr.dk\nbad name\n\n" + SCRIPT + "\nhttp://www.tv2.dk/nyheder"
    response = client.post("/definitions/domains/new", data={"csrf_token": client.csrf, "name": "kb.dk",
                                                              "names": names})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "2 lines refused, nothing was stored" in page and "bad name" in page
    assert SCRIPT not in page and "&lt;script&gt;" in page
    assert "http://www.tv2.dk/nyheder</textarea>" in page  # the input is kept
    assert domain_count(webui_engine) == 0
    response = client.post("/definitions/domains/new", data={
        "csrf_token": client.csrf, "name": "kb.dk", "names": "dr.dk\nhttp://www.tv2.dk/nyheder"})
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Created: 3" in page and "http://www.tv2.dk/nyheder was taken as tv2.dk" in page
    assert domain_row(webui_engine, "tv2.dk") is not None and domain_count(webui_engine) == 3
    empty = client.post("/definitions/domains/new", data={"csrf_token": client.csrf, "names": ""})
    assert empty.status_code == 400


def test_create_page_file_upload(login, webui_engine):
    client = login("admin")
    content = "kb.dk\nhttp://www.dr.dk/news\nnot a name\nøkologi.dk\n# comment\n".encode()
    response = client.post("/definitions/domains/new", content_type="multipart/form-data", data={
        "csrf_token": client.csrf, "file": (io.BytesIO(content), "domains.txt")})
    page = response.get_data(as_text=True)
    assert response.status_code == 400, page
    assert "file domains.txt: 1 line refused, nothing was stored" in page and "not a name" in page
    assert domain_count(webui_engine) == 0
    content = content.replace(b"not a name\n", b"")
    response = client.post("/definitions/domains/new", content_type="multipart/form-data", data={
        "csrf_token": client.csrf, "file": (io.BytesIO(content), "domains.txt")})
    page = response.get_data(as_text=True)
    assert response.status_code == 200, page
    assert "domains created: 3" in page and "line 2: http://www.dr.dk/news was taken as dr.dk" in page
    assert {domain_row(webui_engine, n) is not None for n in ("kb.dk", "dr.dk", "økologi.dk")} == {True}


def test_forms_need_the_csrf_token(login, webui_engine, api):
    create(api, "kb.dk")
    client = login("curator")
    for token in (None, "forged-token"):
        data = {"names": "dr.dk"} if token is None else {"names": "dr.dk", "csrf_token": token}
        response = client.post("/definitions/domains/new", data=data)
        assert response.status_code == 403
        assert "CSRF" in response.get_data(as_text=True)
        response = client.post("/definitions/domains/kb.dk", data={"edition": 1, "comments": "x",
                                                                   **({"csrf_token": token} if token else {})})
        assert response.status_code == 403
    assert domain_count(webui_engine) == 1 and domain_row(webui_engine, "kb.dk")["comments"] == ""


def test_archivist_sees_no_forms_and_may_not_post(login, webui_engine, api):
    create(api, "kb.dk")
    client = login("archivist")
    page = client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert "Delete domain" not in page and 'name="comments"' not in page
    for path, data in (("/definitions/domains/new", {"names": "dr.dk"}),
                       ("/definitions/domains/kb.dk", {"edition": 1, "comments": "x"}),
                       ("/definitions/domains/kb.dk/active", {"edition": 1, "active": "0"}),
                       ("/definitions/domains/kb.dk/delete", {"edition": 1}),
                       ("/definitions/domains/kb.dk/new-seedlist", {"edition": 1, "name": "x", "seeds": "kb.dk"})):
        response = client.post(path, data={"csrf_token": client.csrf, **data})
        assert response.status_code == 403, path
        assert "may not curate" in response.get_data(as_text=True)
    row = domain_row(webui_engine, "kb.dk")
    assert domain_count(webui_engine) == 1 and row["comments"] == "" and row["isactive"] and row["edition"] == 1


def test_domain_page_edit_escapes_and_shows_history(app, login, webui_engine, api):
    create(api, "kb.dk", "sb.dk")
    client = login("curator")
    response = client.post("/definitions/domains/kb.dk", data={
        "csrf_token": client.csrf, "edition": 1, "comments": SCRIPT, "crawlertraps": ".*/cal/.*", "alias": "sb.dk"})
    assert response.status_code == 302
    page = client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert SCRIPT not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "Change history" in page and "curator" in page and "Renew alias" in page and "sb.dk" in page
    row = domain_row(webui_engine, "kb.dk")
    assert row["comments"] == SCRIPT and row["crawlertraps"] == ".*/cal/.*" and row["edition"] == 2
    if "history.domain" in app.view_functions:
        assert 'href="/history/domains/kb.dk"' in page
    # saving the form again keeps the alias's confirmation; the renew button confirms it again
    confirmed = row["lastaliasupdate"]
    client.post("/definitions/domains/kb.dk", data={"csrf_token": client.csrf, "edition": 2, "alias": "sb.dk",
                                                    "comments": SCRIPT})
    assert domain_row(webui_engine, "kb.dk")["lastaliasupdate"] == confirmed
    with webui_engine.begin() as conn:
        conn.execute(update(s.domains).where(s.domains.c.name == "kb.dk").values(lastaliasupdate=T0))
    client.post("/definitions/domains/kb.dk", data={"csrf_token": client.csrf, "edition": 3, "alias": "sb.dk",
                                                    "renew": "1"})
    assert domain_row(webui_engine, "kb.dk")["lastaliasupdate"] > T0
    assert domain_row(webui_engine, "kb.dk")["alias"] == domain_row(webui_engine, "sb.dk")["domain_id"]
    assert domain_row(webui_engine, "kb.dk")["edition"] == 4
    # a stale edition from the form: refused, shown, nothing stored
    stale = client.post("/definitions/domains/kb.dk", data={"csrf_token": client.csrf, "edition": 1,
                                                              "comments": "old"}, follow_redirects=True)
    assert "domain kb.dk was changed by you" in stale.get_data(as_text=True)
    assert domain_row(webui_engine, "kb.dk")["comments"] == SCRIPT
    # a bad trap: refused
    client.post("/definitions/domains/kb.dk", data={"csrf_token": client.csrf, "edition": 4, "crawlertraps": "("})
    assert domain_row(webui_engine, "kb.dk")["edition"] == 4


def test_deactivate_and_activate_from_the_page(login, webui_engine, api):
    create(api, "kb.dk")
    client = login("curator")
    client.post("/definitions/domains/kb.dk/active", data={"csrf_token": client.csrf, "edition": 1, "active": "0"})
    assert not domain_row(webui_engine, "kb.dk")["isactive"]
    assert "inactive" in client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    client.post("/definitions/domains/kb.dk/active", data={"csrf_token": client.csrf, "edition": 2, "active": "1"})
    assert domain_row(webui_engine, "kb.dk")["isactive"]


def test_seedlist_pages(login, webui_engine, api):
    create(api, "kb.dk")
    client = login("curator")
    assert client.get("/definitions/domains/kb.dk/new-seedlist").status_code == 200
    client.post("/definitions/domains/kb.dk/new-seedlist", data={
        "csrf_token": client.csrf, "edition": 1, "name": "news", "seeds": "http://kb.dk/news\n", "comments": SCRIPT})
    page = client.get("/definitions/domains/kb.dk/seedlists/news")
    assert page.status_code == 200 and "http://kb.dk/news" in page.get_data(as_text=True)
    assert SCRIPT not in page.get_data(as_text=True)
    client.post("/definitions/domains/kb.dk/seedlists/news", data={
        "csrf_token": client.csrf, "edition": 2, "seeds": "http://kb.dk/a\nhttp://kb.dk/b"})
    with webui_engine.connect() as conn:
        seeds = conn.scalar(select(s.seedlists.c.seeds).where(s.seedlists.c.name == "news"))
    assert seeds == "http://kb.dk/a\nhttp://kb.dk/b"
    bad = client.post("/definitions/domains/kb.dk/seedlists/news", data={
        "csrf_token": client.csrf, "edition": 3, "seeds": "http://"}, follow_redirects=True)
    assert bad.status_code == 400 and "not a URL: no host" in bad.get_data(as_text=True)
    assert client.get("/definitions/domains/kb.dk/seedlists/nosuch").status_code == 404


def test_configuration_pages(login, webui_engine, api):
    create(api, "kb.dk")
    client = login("curator")
    form = client.get("/definitions/domains/kb.dk/new-configuration").get_data(as_text=True)
    assert "default_orderxml" in form and "defaultseeds" in form
    client.post("/definitions/domains/kb.dk/new-configuration", data={
        "csrf_token": client.csrf, "edition": 1, "name": "small", "template": "default_orderxml",
        "seedlists": ["defaultseeds"], "max_objects": "100", "max_bytes": ""})
    page = client.get("/definitions/domains/kb.dk/configurations/small")
    assert page.status_code == 200 and 'value="100"' in page.get_data(as_text=True)
    client.post("/definitions/domains/kb.dk/configurations/small", data={
        "csrf_token": client.csrf, "edition": 2, "template": "default_orderxml", "seedlists": ["defaultseeds"],
        "max_objects": "200", "max_bytes": "5000", "default": "1"})
    with webui_engine.connect() as conn:
        row = conn.execute(select(s.configurations).where(s.configurations.c.name == "small")).mappings().one()
        default = conn.scalar(select(s.domains.c.defaultconfig).where(s.domains.c.name == "kb.dk"))
    assert (row["maxobjects"], row["maxbytes"], default) == (200, 5000, row["config_id"])
    bad = client.post("/definitions/domains/kb.dk/configurations/small", data={
        "csrf_token": client.csrf, "edition": 4, "template": "default_orderxml", "seedlists": ["defaultseeds"],
        "max_objects": "-7", "max_bytes": "5000"}, follow_redirects=True)
    assert "-1 (unlimited)" in bad.get_data(as_text=True)
    archivist = login("archivist").get("/definitions/domains/kb.dk/configurations/small").get_data(as_text=True)
    assert "200" in archivist and 'name="max_objects"' not in archivist


@pytest.mark.parametrize("path", ["/definitions/", "/definitions/domains", "/definitions/domains/new",
                                  "/definitions/domains/kb.dk", "/definitions/domains/kb.dk/new-seedlist"])
def test_pages_need_a_login(app, path):
    response = app.test_client().get(path)
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_repository_search_paging_and_delete_on_both_databases(engine):
    """The queries behind the pages on SQLite and PostgreSQL (the ``engine`` fixture runs both)."""
    with engine.begin() as conn:
        domains = DomainRepository(conn, "tester")
        made = domains.create_many(["abc.dk", "abd.dk", "abcx.dk", "økologi.dk", "abc.dk"])
        assert made.created == ["abc.dk", "abd.dk", "abcx.dk", "økologi.dk"] and made.existing == []
        first = domains.search_page("ab*", None, 2)
        second = domains.search_page("ab*", first[-1].domain.name, 2)
        assert [row.domain.name for row in first + second] == ["abc.dk", "abcx.dk", "abd.dk"]
        assert [row.domain.name for row in domains.search_page("abc*", None, 10)] == ["abc.dk", "abcx.dk"]
        assert [row.domain.name for row in domains.search_page("xn--kologi-9xa.dk", None, 10)] == ["økologi.dk"]
        domains.edit("abc.dk", 1, comments="Danish 100% News", crawlertraps=".*/Calendar/.*")
        assert [row.domain.name for row in domains.search_page("100% news", None, 10, "comments")] == ["abc.dk"]
        assert [row.domain.name for row in domains.search_page("calendar", None, 10, "crawlertraps")] == ["abc.dk"]
        assert domains.search_page("100_ news", None, 10, "comments") == []
        domains.set_active("abd.dk", False, 1)
        assert [row.is_active for row in second] == [True] and not domains.is_active("abd.dk")
        domains.delete("abd.dk", 2)
        assert not domains.exists("abd.dk")
        with pytest.raises(StaleEditionError):
            domains.delete("abc.dk", 1)
    assert domain_count(engine) == 3


def test_domain_page_shows_extended_fields_and_delete_removes_their_values(login, webui_engine, api):
    create(api, "kb.dk")
    with webui_engine.begin() as conn:
        fields = ExtendedFieldRepository(conn)
        owner = fields.define(ExtendedFieldType.DOMAINS, "Owner", ExtendedFieldDatatype.STRING)
        domain_id = conn.scalar(select(s.domains.c.domain_id).where(s.domains.c.name == "kb.dk"))
        fields.set_value(owner.field_id, domain_id, SCRIPT)
    client = login("archivist")
    page = client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert "Owner" in page and "&lt;script&gt;" in page and SCRIPT not in page
    curator = login("curator")
    curator.post("/definitions/domains/kb.dk/delete", data={"csrf_token": curator.csrf, "edition": 1})
    with webui_engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.extendedfieldvalue)) == 0
    assert domain_count(webui_engine) == 0
