# ruff: noqa: F811 - the tests take the fixtures imported from test_live_changes_api as their arguments
"""Politeness bounded by the site's settings (harvestsuite.liveChanges.minDelayFactor, minDelayMs,
minMaxDelayMs, maxPerHost), on SQLite and PostgreSQL: a live politeness change and a crawl template
uploaded through the API or the templates page below a floor (or above the ceiling of URIs per host) are
refused with a 400 naming the value, the bound and its setting, and nothing is stored."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask
from lxml import etree
from sqlalchemy import Engine, func, select

from harvestdef.crawltemplate import template_parser
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.politeness import PolitenessBounds, template_politeness
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_live_changes_api import api, crawl, role_app  # noqa: F401 - fixtures

pytestmark = pytest.mark.database("users")

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_TEMPLATE = (ROOT / "templates" / "default_orderxml.cxml").read_text(encoding="utf-8")
FLOORS = {"harvestsuite.liveChanges.minDelayFactor": 1.5, "harvestsuite.liveChanges.minDelayMs": 500,
          "harvestsuite.liveChanges.minMaxDelayMs": 2000, "harvestsuite.liveChanges.maxPerHost": 3}


@pytest.fixture
def app(engine: Engine, tmp_path: Path) -> Flask:
    return role_app(engine, tmp_path, FLOORS)



@pytest.mark.parametrize("fields, field, words", [
    ({"delay_factor": 0}, "delay_factor",
     "must be at least 1.5 (harvestsuite.liveChanges.minDelayFactor), not 0"),
    ({"min_delay_ms": 0}, "min_delay_ms", "must be at least 500 (harvestsuite.liveChanges.minDelayMs), not 0"),
    ({"max_delay_ms": 1000}, "max_delay_ms",
     "must be at least 2000 (harvestsuite.liveChanges.minMaxDelayMs), not 1000"),
    ({"max_per_host": 100}, "max_per_host", "must be at most 3 (harvestsuite.liveChanges.maxPerHost), not 100"),
    ({"delay_factor": 0, "min_delay_ms": 0, "max_delay_ms": 0, "max_per_host": 100}, "delay_factor",
     "harvestsuite.liveChanges.minDelayFactor"),
])
def test_a_live_politeness_change_below_the_floor_is_refused_naming_value_and_floor(crawl, api, engine, fields, field,
                                                                                    words):
    crawl.progress(utcnow())
    answer = api("operator", "post", f"/api/v1/jobs/{crawl.job_id}/changes", json={"kind": "politeness", **fields})
    assert answer.status_code == 400, answer.get_json()
    error = answer.get_json()["error"]
    assert error["field"] == field and words in error["message"], error
    with engine.connect() as conn:
        assert JobChangeRepository(conn).for_job(crawl.job_id) == []
    within = api("operator", "post", f"/api/v1/jobs/{crawl.job_id}/changes",
                 json={"kind": "politeness", "delay_factor": 1.5, "min_delay_ms": 500, "max_delay_ms": 2000,
                       "max_per_host": 3})
    assert within.status_code == 202, within.get_json()


def polite(template: str, **values: str) -> str:
    for key, value in values.items():
        template = re.sub(rf"disposition\.{key}=[\d.]+", f"disposition.{key}={value}", template)
    return template


@pytest.mark.parametrize("template, words", [
    (polite(DEFAULT_TEMPLATE, delayFactor="0"),
     "disposition.delayFactor on line 53 must be at least 1.5 (harvestsuite.liveChanges.minDelayFactor), not 0"),
    (polite(DEFAULT_TEMPLATE, minDelayMs="0"),
     "disposition.minDelayMs on line 54 must be at least 500 (harvestsuite.liveChanges.minDelayMs), not 0"),
    (polite(DEFAULT_TEMPLATE, maxDelayMs="0"), "disposition.maxDelayMs on line 55 must be at least 2000"),
    (DEFAULT_TEMPLATE.replace('<property name="parallelQueues" value="1"/>',
                              '<property name="parallelQueues" value="100"/>'),
     "queueAssignmentPolicy.parallelQueues on line 259 must be at most 3 (harvestsuite.liveChanges.maxPerHost)"),
    # an override wins over the bean's own property, as in Spring
    (DEFAULT_TEMPLATE.replace("disposition.delayFactor=5.0", "disposition.delayFactor=5.0\n"
                              "queueAssignmentPolicy.parallelQueues=50"),
     "queueAssignmentPolicy.parallelQueues on line 54 must be at most 3"),
])
def test_a_template_below_the_floor_is_refused_through_the_api_and_the_page(app, api, engine, template, words):
    answer = api("admin", "post", "/api/v1/templates", json={"name": "impolite", "cxml": template})
    assert answer.status_code == 400, answer.get_json()
    error = answer.get_json()["error"]
    assert error["field"] == "cxml" and words in error["message"], error

    client = app.test_client()
    client.post("/login", data={"name": "admin", "password": PASSWORD, "csrf_token": csrf_of(client)})
    page = client.post("/definitions/templates", data={"name": "impolite", "cxml": template,
                                                       "csrf_token": csrf_of(client, "/definitions/templates")})
    assert page.status_code == 400 and words in page.get_data(as_text=True)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).where(s.ordertemplates.c.name == "impolite")) == 0

    polite_one = api("admin", "post", "/api/v1/templates", json={"name": "polite", "cxml": DEFAULT_TEMPLATE})
    assert polite_one.status_code == 201, polite_one.get_json()
    edition = polite_one.get_json()["edition"]
    replaced = api("admin", "patch", "/api/v1/templates/polite", json={"cxml": template, "edition": edition})
    assert replaced.status_code == 400 and words in replaced.get_json()["error"]["message"]


def test_placeholders_and_values_left_to_the_crawler_are_not_judged():
    root = etree.fromstring(polite(DEFAULT_TEMPLATE, delayFactor="%{DELAY}").encode(), template_parser())
    given = template_politeness(root)
    assert "disposition.delayFactor" not in given and given["disposition.minDelayMs"] == ("1000", 54)
    PolitenessBounds(min_delay_factor=100.0).check_template(root, "t")  # the placeholder is filled in later
