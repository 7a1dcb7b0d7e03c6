"""A domain's extended-field values through the API and the domain page: set, checked, refused when
stale or invalid, audited on the domain's change history, and written only by curators and admins."""

from __future__ import annotations

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.model.definitions import ExtendedFieldDatatype as D
from harvestdef.model.definitions import ExtendedFieldType as T
from harvestdef.repositories.extendedfields import ExtendedFieldRepository


def setup(api, webui_engine) -> int:
    """kb.dk and three domain fields; returns the domain's edition."""
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]}).status_code == 201
    with webui_engine.begin() as conn:
        fields = ExtendedFieldRepository(conn, "admin")
        fields.define(T.DOMAINS, "Owner", D.STRING, maxlen=40, sequencenr=1)
        fields.define(T.DOMAINS, "Public", D.BOOLEAN, defaultvalue="false", sequencenr=2)
        fields.define(T.DOMAINS, "Kind", D.SELECT, options=("library", "museum"), sequencenr=3)
    return api("curator", "get", "/api/v1/domains/kb.dk").json["edition"]


def stored_values(webui_engine) -> int:
    with webui_engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.extendedfieldvalue))


def test_the_api_reads_and_sets_values_under_the_domain_edition(api, webui_engine):
    edition = setup(api, webui_engine)
    read = api("archivist", "get", "/api/v1/domains/kb.dk/extendedfields").json
    assert read["edition"] == edition
    assert [(f["name"], f["datatype"], f["value"]) for f in read["fields"]] == [
        ("Owner", "STRING", ""), ("Public", "BOOLEAN", "false"), ("Kind", "SELECT", "")]
    assert read["fields"][2]["options"] == ["library", "museum"]
    answer = api("curator", "patch", "/api/v1/domains/kb.dk/extendedfields",
                 json={"edition": edition, "values": {"Owner": "Royal Library", "Kind": "library"}})
    assert answer.status_code == 200, answer.json
    assert {f["name"]: f["value"] for f in answer.json["fields"]} == {
        "Owner": "Royal Library", "Public": "false", "Kind": "library"}
    assert answer.json["edition"] == edition + 1
    stale = api("curator", "patch", "/api/v1/domains/kb.dk/extendedfields",
                json={"edition": edition, "values": {"Owner": "someone else"}})
    assert stale.status_code == 409 and stale.json["error"]["code"] == "conflict"
    with webui_engine.connect() as conn:
        actors = set(conn.scalars(select(s.audit_log.c.actor).where(s.audit_log.c.tablename == "extendedfieldvalue")))
    assert actors == {"curator"}


def test_bad_values_are_refused_naming_the_field_and_nothing_is_stored(api, webui_engine):
    edition = setup(api, webui_engine)
    cases = [({"Owner": "KB", "Public": "maybe"}, "'Public' is true or false"),
             ({"Kind": "zoo"}, "'Kind' is one of library, museum"),
             ({"Owner": "x" * 41}, "'Owner' holds at most 40 characters"),
             ({"Colour": "red"}, "no domains extended field named 'Colour'"),
             ({"Owner": 7}, "the value of extended field 'Owner' must be a string")]
    for values, message in cases:
        answer = api("curator", "patch", "/api/v1/domains/kb.dk/extendedfields",
                     json={"edition": edition, "values": values})
        assert answer.status_code == 400 and message in answer.json["error"]["message"], answer.json
        assert answer.json["error"]["field"] == "values"
    missing = api("curator", "patch", "/api/v1/domains/kb.dk/extendedfields", json={"values": {}})
    assert missing.status_code == 400 and missing.json["error"]["field"] == "edition"
    assert stored_values(webui_engine) == 0
    assert api("curator", "get", "/api/v1/domains/kb.dk").json["edition"] == edition
    refused = api("archivist", "patch", "/api/v1/domains/kb.dk/extendedfields",
                  json={"edition": edition, "values": {"Owner": "KB"}})
    assert refused.status_code == 403 and stored_values(webui_engine) == 0
    unknown = api("curator", "get", "/api/v1/domains/nosuch.dk/extendedfields")
    assert unknown.status_code == 404


def test_the_domain_page_edits_values_and_shows_their_changes(api, login, webui_engine):
    edition = setup(api, webui_engine)
    client = login("curator")
    page = client.get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert 'name="field:Owner"' in page and '<option value="museum"' in page
    form = {"csrf_token": client.csrf, "edition": str(edition), "field:Owner": "<script>alert(1)</script>",
            "field:Public": "true", "field:Kind": ""}
    saved = client.post("/definitions/domains/kb.dk/extendedfields", data=form, follow_redirects=True)
    text = saved.get_data(as_text=True)
    assert "Extended fields saved." in text
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "insert extended field Owner" in text and "insert extended field Public" in text
    assert "extended field Kind" not in text, "an unchanged value is neither written nor audited"
    assert "<td>update</td>" not in text, "the domain's edition moved on, which the history does not repeat"
    stale = client.post("/definitions/domains/kb.dk/extendedfields", data={**form, "field:Owner": "KB"},
                        follow_redirects=True).get_data(as_text=True)
    assert "in another tab or request" in stale
    invalid = client.post("/definitions/domains/kb.dk/extendedfields",
                          data={**form, "edition": str(edition + 1), "field:Public": "maybe"},
                          follow_redirects=True).get_data(as_text=True)
    assert "extended field &#39;Public&#39; is true or false, not &#39;maybe&#39;" in invalid
    assert stored_values(webui_engine) == 2
    reader = login("archivist").get("/definitions/domains/kb.dk").get_data(as_text=True)
    assert 'name="field:Owner"' not in reader and "<th>Public</th><td>true</td>" in reader
    forbidden = login("archivist").post("/definitions/domains/kb.dk/extendedfields", data=form)
    assert forbidden.status_code == 403


def harvest_setup(api, webui_engine) -> int:
    """A selective harvest "weekly" and two harvestdefinition fields; returns the harvest's edition."""
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "weekly", "schedule": "Once_a_day", "configurations": [], "active": False})
    assert created.status_code == 201, created.json
    with webui_engine.begin() as conn:
        fields = ExtendedFieldRepository(conn, "admin")
        fields.define(T.HARVESTDEFINITIONS, "Curator", D.STRING, maxlen=20, sequencenr=1)
        fields.define(T.HARVESTDEFINITIONS, "Purpose", D.SELECT, options=("event", "routine"), sequencenr=2)
        fields.define(T.DOMAINS, "Owner", D.STRING, sequencenr=1)  # another type: not the harvest's
    return api("curator", "get", "/api/v1/harvests/weekly").json["edition"]


def test_the_api_reads_and_sets_a_harvests_values_under_its_edition(api, webui_engine):
    edition = harvest_setup(api, webui_engine)
    read = api("archivist", "get", "/api/v1/harvests/weekly/extendedfields").json
    assert read["harvest"] == "weekly" and read["edition"] == edition
    assert [(f["name"], f["datatype"], f["value"]) for f in read["fields"]] == [
        ("Curator", "STRING", ""), ("Purpose", "SELECT", "")]
    answer = api("curator", "patch", "/api/v1/harvests/weekly/extendedfields",
                 json={"edition": edition, "values": {"Curator": "Anna", "Purpose": "event"}})
    assert answer.status_code == 200, answer.json
    assert {f["name"]: f["value"] for f in answer.json["fields"]} == {"Curator": "Anna", "Purpose": "event"}
    assert answer.json["edition"] == edition + 1
    assert api("curator", "get", "/api/v1/harvests/weekly").json["edition"] == edition + 1
    unchanged = api("curator", "patch", "/api/v1/harvests/weekly/extendedfields",
                    json={"edition": edition + 1, "values": {"Curator": "Anna"}})
    assert unchanged.status_code == 200 and unchanged.json["edition"] == edition + 1
    stale = api("curator", "patch", "/api/v1/harvests/weekly/extendedfields",
                json={"edition": edition, "values": {"Curator": "Bo"}})
    assert stale.status_code == 409 and stale.json["error"]["code"] == "conflict"
    with webui_engine.connect() as conn:
        audited = conn.execute(select(s.audit_log.c.actor, s.audit_log.c.action)
                               .where(s.audit_log.c.tablename == "extendedfieldvalue")).all()
    assert sorted(audited) == [("curator", "insert"), ("curator", "insert")]


def test_bad_harvest_values_and_other_roles_are_refused_and_nothing_is_stored(api, webui_engine):
    edition = harvest_setup(api, webui_engine)
    cases = [({"Curator": "A", "Purpose": "party"}, "'Purpose' is one of event, routine"),
             ({"Curator": "x" * 21}, "'Curator' holds at most 20 characters"),
             ({"Owner": "KB"}, "no harvestdefinitions extended field named 'Owner'"),
             ({"Curator": ["A"]}, "the value of extended field 'Curator' must be a string")]
    for values, message in cases:
        answer = api("curator", "patch", "/api/v1/harvests/weekly/extendedfields",
                     json={"edition": edition, "values": values})
        assert answer.status_code == 400 and message in answer.json["error"]["message"], answer.json
        assert answer.json["error"]["field"] == "values"
    for role in ("archivist", "operator"):
        refused = api(role, "patch", "/api/v1/harvests/weekly/extendedfields",
                      json={"edition": edition, "values": {"Curator": "A"}})
        assert refused.status_code == 403
    assert stored_values(webui_engine) == 0
    assert api("curator", "get", "/api/v1/harvests/weekly").json["edition"] == edition
    assert api("curator", "get", "/api/v1/harvests/nosuch/extendedfields").status_code == 404


def test_the_harvest_page_edits_values_and_shows_them_in_its_change_history(api, login, webui_engine):
    edition = harvest_setup(api, webui_engine)
    client = login("curator")
    page = client.get("/definitions/harvests/weekly").get_data(as_text=True)
    assert 'name="field:Curator"' in page and '<option value="routine"' in page and "field:Owner" not in page
    form = {"csrf_token": client.csrf, "edition": str(edition), "field:Curator": "<b>Anna</b>",
            "field:Purpose": "routine"}
    saved = client.post("/definitions/harvests/weekly/extendedfields", data=form, follow_redirects=True)
    text = saved.get_data(as_text=True)
    assert "Extended fields saved." in text
    assert "<b>Anna</b>" not in text and "&lt;b&gt;Anna&lt;/b&gt;" in text
    assert "Change history" in text
    assert "insert extended field Curator" in text and "insert extended field Purpose" in text
    stale = client.post("/definitions/harvests/weekly/extendedfields", data={**form, "field:Curator": "Bo"})
    assert stale.status_code == 409 and "in another tab or request" in stale.get_data(as_text=True)
    assert stored_values(webui_engine) == 2
    reader = login("archivist").get("/definitions/harvests/weekly").get_data(as_text=True)
    assert 'name="field:Curator"' not in reader and "<th>Purpose</th><td>routine</td>" in reader
    assert login("archivist").post("/definitions/harvests/weekly/extendedfields", data=form).status_code == 403
