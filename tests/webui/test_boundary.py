"""The web UI's error boundary and the checks at its edge, on SQLite and PostgreSQL alike: bad input through
the API and the forms is a 4xx naming the field with nothing stored, a failure of the server is a 500 with
an error id and no SQL, and every name it accepts can be shown, downloaded and addressed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, insert, select, text

from harvestdef.db import schema as s
from harvestdef.schedules import Schedule, TimeUnit
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")

CXML = '<?xml version="1.0"?>\n<beans>\n  <bean id="x"/>\n</beans>\n'
UNICODE_NAME = "skabelon-模板"
UNICODE_FILENAME = "filename*=UTF-8''skabelon-%E6%A8%A1%E6%9D%BF"


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The conftest's harvest database on both databases (the conftest's is SQLite only)."""
    yield from database_with_users(database_url)


def count(engine: Engine, table) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(table))


def refused(response, field: str) -> dict:
    """The error of a 400 answer, which must name ``field``."""
    assert response.status_code == 400, response.get_data(as_text=True)[:500]
    error = response.get_json()["error"]
    assert error["field"] == field and error["code"] == "invalid", error
    return error


def schedule(api, name: str = "daily") -> dict:
    response = api("curator", "post", "/api/v1/schedules", json={"name": name, "timeunit": "DAILY"})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()


# ------------------------------------------------------------------ numbers, ids, cursors, nesting
def test_an_edition_beyond_64_bits_is_refused_naming_it(api):
    schedule(api)
    error = refused(api("curator", "patch", "/api/v1/schedules/daily", json={"edition": 2**70, "numtimeunits": 3}),
                    "edition")
    assert str(2**70) in error["message"]
    assert api("curator", "get", "/api/v1/schedules/daily").get_json()["numtimeunits"] == 1


def test_a_23_digit_id_finds_nothing_and_a_23_digit_cursor_or_filter_is_refused(api):
    huge = "12345678901234567890123"
    assert api("archivist", "get", f"/api/v1/jobs/{huge}").get_json()["error"]["code"] == "not_found"
    assert api("operator", "post", f"/api/v1/jobs/{huge}/restart").status_code == 404
    refused(api("archivist", "get", f"/api/v1/jobs?from_id={huge}"), "from_id")
    cursor = base64.urlsafe_b64encode(json.dumps([int(huge)]).encode()).decode().rstrip("=")
    refused(api("archivist", "get", f"/api/v1/jobs?after={cursor}"), "after")
    refused(api("archivist", "get", f"/api/v1/domains?limit={huge}"), "limit")


def test_a_page_that_reads_a_number_itself_refuses_one_beyond_64_bits(api, login):
    """The guard of the web UI's engine refuses a lookup by such a number on both databases: SQLite's driver
    overflowed on it (a 500)."""
    api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]})
    page = login("archivist").get(f"/history/domains/kb.dk?after={10**30}")
    assert page.status_code == 400 and "beyond 64 bits" in page.get_data(as_text=True)


def test_json_nested_5000_deep_is_refused_before_it_is_parsed(api, webui_engine):
    before = count(webui_engine, s.schedules)
    response = api("curator", "post", "/api/v1/schedules", data="[" * 5000 + "]" * 5000,
                   headers={"Content-Type": "application/json"})
    assert "nest" in refused(response, "body")["message"]
    wrapped = {"name": "deep", "timeunit": "DAILY", "comments": json.loads("[" * 40 + "]" * 40)}
    refused(api("curator", "post", "/api/v1/schedules", json=wrapped), "body")
    assert count(webui_engine, s.schedules) == before


def test_a_64_bit_limit_in_a_32_bit_column_is_refused_the_same_on_both_databases(api, webui_engine):
    """maxrate is an integer column (32 bits): PostgreSQL refused 2**40 with its SQL, SQLite stored it."""
    api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]})
    before = count(webui_engine, s.configurations)
    body = {"name": "fast", "template": "default_orderxml", "seedlists": ["defaultseeds"], "max_rate": 2**40}
    error = refused(api("curator", "post", "/api/v1/domains/kb.dk/configurations", json=body), "max_rate")
    assert "2147483647" in error["message"]
    refused(api("curator", "post", "/api/v1/harvests", json={"type": "snapshot", "name": "big",
                                                              "max_objects": 2**63}), "max_objects")
    assert count(webui_engine, s.configurations) == before
    assert count(webui_engine, s.harvestdefinitions) == 0


# ------------------------------------------------------------------ text: NUL, lengths
def test_a_nul_byte_is_refused_in_bodies_paths_and_queries(api, webui_engine):
    before = count(webui_engine, s.schedules)
    refused(api("curator", "post", "/api/v1/schedules", json={"name": "a\x00b", "timeunit": "DAILY"}), "name")
    refused(api("curator", "post", "/api/v1/schedules", json={"name": "ok", "timeunit": "DAILY",
                                                               "comments": "x\x00"}), "comments")
    refused(api("archivist", "get", "/api/v1/templates/a%00b"), "name")
    refused(api("archivist", "get", "/api/v1/domains?q=a%00b"), "q")
    assert count(webui_engine, s.schedules) == before


def test_lengths_of_the_schema_are_enforced_on_every_database(api, webui_engine):
    before = count(webui_engine, s.schedules)
    error = refused(api("curator", "post", "/api/v1/schedules", json={"name": "n" * 301, "timeunit": "DAILY"}),
                    "name")
    assert "at most 300 characters, not 301" in error["message"]
    refused(api("curator", "post", "/api/v1/schedules", json={"name": "n" * 100_000, "timeunit": "DAILY"}), "name")
    refused(api("curator", "post", "/api/v1/schedules", json={"name": "long comments", "timeunit": "DAILY",
                                                               "comments": "c" * 30_001}), "comments")
    assert count(webui_engine, s.schedules) == before
    assert api("curator", "post", "/api/v1/schedules", json={"name": "n" * 300, "timeunit": "DAILY",
                                                               "comments": "c" * 30_000}).status_code == 201


# ------------------------------------------------------------------ the same through the forms
def test_the_schedule_form_refuses_bad_numbers_and_text_naming_the_field(login, webui_engine):
    curator = login("curator")
    before = count(webui_engine, s.schedules)
    base = {"csrf_token": curator.csrf, "name": "formed", "timeunit": "2", "numtimeunits": "1"}
    response = curator.post("/definitions/schedules", data={**base, "numtimeunits": "1e23"})
    assert response.status_code == 400 and "numtimeunits" in response.get_data(as_text=True)
    response = curator.post("/definitions/schedules", data={**base, "numtimeunits": str(2**70)})
    assert response.status_code == 400 and "numtimeunits" in response.get_data(as_text=True)
    response = curator.post("/definitions/schedules", data={**base, "comments": "c" * 30_001})
    assert response.status_code == 400 and "Comments: must be at most 30000" in response.get_data(as_text=True)
    response = curator.post("/definitions/schedules", data={**base, "name": "nul\x00name"})
    assert response.status_code == 400 and "Name: must not contain a NUL" in response.get_data(as_text=True)
    assert count(webui_engine, s.schedules) == before


def test_a_non_ascii_csrf_token_is_refused_not_a_server_error(login, webui_engine):
    curator = login("curator")
    response = curator.post("/definitions/schedules", data={"csrf_token": "tøken-模板", "name": "x",
                                                            "timeunit": "2"})
    assert response.status_code == 403 and "CSRF" in response.get_data(as_text=True)
    with webui_engine.connect() as conn:
        assert conn.scalar(select(s.schedules.c.name).where(s.schedules.c.name == "x")) is None


# ------------------------------------------------------------------ the server's own failures
def test_a_failing_database_is_a_500_with_an_error_id_and_no_sql(api, webui_engine, login, caplog):
    assert api("curator", "post", "/api/v1/harvests", json={"type": "snapshot", "name": "snap"}).status_code == 201
    with webui_engine.begin() as conn:
        conn.execute(text("DROP TABLE harvest_state"))
    response = api("archivist", "get", "/api/v1/harvests")
    assert response.status_code == 500
    error = response.get_json()["error"]
    assert error["code"] == "internal" and error["field"] is None and error["id"] in error["message"]
    for leak in ("SELECT", "harvest_state", "sqlite", "psycopg", "[parameters", "/"):
        assert leak not in error["message"], leak
    logged = [record for record in caplog.records if error["id"] in record.getMessage()]
    assert logged and logged[0].exc_info is not None and "harvest_state" in logged[0].getMessage()
    page = login("archivist").get("/definitions/harvests")
    assert page.status_code == 500 and "internal error" in page.get_data(as_text=True)
    assert "harvest_state" not in page.get_data(as_text=True)


# ------------------------------------------------------------------ names
def test_a_unicode_name_is_downloaded_with_rfc_6266_filename_star(api, login, webui_engine):
    assert api("admin", "post", "/api/v1/templates", json={"name": UNICODE_NAME, "cxml": CXML}).status_code == 201
    download = api("archivist", "get", f"/api/v1/templates/{UNICODE_NAME}?format=cxml")
    assert download.status_code == 200 and download.get_data(as_text=True) == CXML
    disposition = download.headers["Content-Disposition"]
    assert disposition == f"attachment; filename=\"skabelon-__.cxml\"; {UNICODE_FILENAME}.cxml"
    curator = login("curator")
    page = curator.get(f"/definitions/templates/{UNICODE_NAME}/download")
    assert page.status_code == 200 and UNICODE_FILENAME in page.headers["Content-Disposition"]
    created = curator.post("/definitions/traps", data={"csrf_token": curator.csrf, "name": UNICODE_NAME,
                                                       "expressions": ".*/calendar/.*"})
    assert created.status_code == 302
    traps = curator.get(f"/definitions/traps/{UNICODE_NAME}/download")
    assert traps.status_code == 200 and f"{UNICODE_FILENAME}.txt" in traps.headers["Content-Disposition"]
    assert traps.get_data(as_text=True) == ".*/calendar/.*\n"


@pytest.mark.parametrize("name", ["two\r\nlines", "tab\there", "bell\x07", "right\u202eleft", "a/b"])
def test_names_with_control_characters_or_a_slash_are_refused_everywhere(api, login, webui_engine, name):
    error = refused(api("admin", "post", "/api/v1/templates", json={"name": name, "cxml": CXML}), "name")
    assert "must not contain control characters or '/'" in error["message"]
    refused(api("curator", "post", "/api/v1/schedules", json={"name": name, "timeunit": "DAILY"}), "name")
    schedule(api, "plain")
    refused(api("curator", "patch", "/api/v1/schedules/plain", json={"edition": 1, "name": name}), "name")
    refused(api("curator", "post", "/api/v1/harvests", json={"type": "snapshot", "name": name}), "name")
    curator = login("curator")
    response = curator.post("/definitions/traps", data={"csrf_token": curator.csrf, "name": name,
                                                        "expressions": ".*x"})
    assert response.status_code == 400 and "Name: a crawler trap list" in response.get_data(as_text=True)
    assert count(webui_engine, s.global_crawler_trap_lists) == 0
    assert count(webui_engine, s.harvestdefinitions) == 0
    with webui_engine.connect() as conn:
        assert conn.scalar(select(s.schedules.c.name).where(s.schedules.c.name == name)) is None


def test_a_name_stored_with_a_slash_is_still_shown_addressed_and_downloaded(api, login, webui_engine):
    """A name from before the rule (or from NetarchiveSuite's database) keeps working: nothing is lost."""
    with webui_engine.begin() as conn:
        conn.execute(insert(s.ordertemplates).values(name="old/one", orderxml=CXML, isactive=True, edition=1))
    listing = api("archivist", "get", "/api/v1/templates").get_json()
    assert "old/one" in [item["name"] for item in listing["items"]]
    assert api("archivist", "get", "/api/v1/templates/old/one").get_json()["cxml"] == CXML
    download = api("archivist", "get", "/api/v1/templates/old/one?format=cxml")
    assert "filename*=UTF-8''old%2Fone.cxml" in download.headers["Content-Disposition"]
    patched = api("admin", "patch", "/api/v1/templates/old/one", json={"edition": 1, "description": "kept"})
    assert patched.status_code == 200 and patched.get_json()["name"] == "old/one"
    page = login("curator").get("/definitions/templates/old/one/download")
    assert page.status_code == 200 and page.get_data(as_text=True) == CXML


# ------------------------------------------------------------------ times at the ends of the calendar
def test_a_time_outside_the_calendar_in_utc_is_refused_naming_it(api, webui_engine):
    before = count(webui_engine, s.schedules)
    body = {"name": "early", "timeunit": "DAILY", "startdate": "0001-01-01T00:00:00+05:00"}
    assert "outside the years 1 to 9999" in refused(api("curator", "post", "/api/v1/schedules", json=body),
                                                    "startdate")["message"]
    refused(api("archivist", "get", "/api/v1/jobs?since=0001-01-01T00:00:00%2B05:00"), "since")
    refused(api("archivist", "get", "/api/v1/jobs?until=9999-12-31T23:00:00-05:00"), "until")
    assert count(webui_engine, s.schedules) == before


@pytest.mark.parametrize("unit", list(TimeUnit))
def test_a_schedule_whose_next_event_passes_the_year_9999_has_none(unit):
    """A schedule the API accepts (numtimeunits within 64 bits) never makes the scheduler overflow: a step
    past the last representable time means the schedule has no more events."""
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    zone = ZoneInfo("Europe/Copenhagen")
    huge = Schedule(name="huge", timeunit=unit, numtimeunits=2**62)
    assert huge.first_event(now, zone) is not None
    assert huge.next_event(now, 1, zone) is None
    slotted = Schedule(name="late", timeunit=unit, anytime=False, onminute=59, onhour=23, ondayofweek=7,
                       ondayofmonth=31, startdate=datetime(9999, 12, 31, 23, 59, 30, tzinfo=UTC))
    first = slotted.first_event(now, zone)
    assert first is None or slotted.next_event(first, 1, zone) is None
