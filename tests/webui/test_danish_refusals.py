"""Every form page refuses in Danish when Danish is chosen: one wrong value is sent to each form, and the
refusal beside the field, the summary at the top (and, for refused lines, each line's reason) are the
catalogue's Danish, with no English sentence on the page that the catalogue does not say (the checker of
test_danish_pages.py). The JSON API, read by programs, answers the same wrong input in its English, word
for word as before."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from lxml import html as lxml_html
from sqlalchemy import Engine

from harvestdef.queues import open_transport
from harvestdef.settings import QueueSettings
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_danish_pages import Language, user_data, visible_texts
from tests.webui.test_harvests import make_domains
from tests.webui.test_live_job import start_crawl
from webui.language import COOKIE


@dataclass(frozen=True)
class Case:
    """A form (the path it is sent to, what it sends), the field it refuses, and the Danish words expected
    beside it (or, for refused lines, the line's reason) and in the summary."""

    path: str
    data: dict[str, str]
    field: str
    beside: str  # empty: the refusal names no field
    summary: str


SCHEDULE = {"name": "natlig", "timeunit": "DAILY", "when": "anytime", "begin": "asap", "end": "forever"}
CASES = {
    "schedule": Case("/definitions/schedules", {**SCHEDULE, "numtimeunits": "abc"}, "numtimeunits",
                     "skal være et heltal, ikke 'abc'", "Hver: skal være et heltal, ikke 'abc'"),
    "schedule edit": Case("/definitions/schedules/Once_a_week", {**SCHEDULE, "name": "Once_a_week",
                                                                  "numtimeunits": "0"},
                          "numtimeunits", "skal være mindst 1, ikke 0", "Hver: skal være mindst 1, ikke 0"),
    "selective harvest": Case("/definitions/harvests/new/selective",
                              {"name": "kultur", "schedule": "Once_a_week", "configurations": "kb.dk\nnosuch.dk"},
                              "configurations", "intet domæne nosuch.dk",
                              "konfigurationer i høstningen kultur: 1 linje afvist, intet blev gemt"),
    "event harvest": Case("/definitions/harvests/new/event",
                          {"name": "oversvømmelse", "schedule": "Once_a_month", "seeds": "http://www.kb.dk/flood",
                           "template": "default_orderxml", "max_hops": "mange"}, "max_hops",
                          "skal være et heltal fra 0 til 1000, ikke 'mange'",
                          "skal være et heltal fra 0 til 1000, ikke 'mange'"),
    "event harvest limit": Case("/definitions/harvests/new/event",
                                {"name": "storm", "schedule": "Once_a_month", "seeds": "http://www.kb.dk/storm",
                                 "template": "default_orderxml", "max_objects": "-5"}, "max_objects",
                                "skal være -1 (ubegrænset) eller mindst 0, ikke -5",
                                "Maks. objekter: skal være -1 (ubegrænset) eller mindst 0, ikke -5"),
    "snapshot harvest": Case("/definitions/harvests/new/snapshot", {"name": "tvaers", "max_bytes": "1e9"},
                             "max_bytes", "skal være et heltal, ikke '1e9'", "skal være et heltal, ikke '1e9'"),
    "harvest edit": Case("/definitions/harvests/redigeret", {"schedule": "Once_a_day",
                                                             "configurations": "kb.dk\nikke-et-domæne"},
                         "configurations", "'ikke-et-domæne' har intet topdomæne",
                         "1 linje afvist, intet blev gemt"),
    "add seeds": Case("/definitions/harvests/begivenhed/seeds",
                      {"seeds": "ftp://kb.dk/x", "template": "default_orderxml"}, "seeds",
                      "ikke en http- eller https-URL (dens skema er ftp)", "1 linje afvist, intet blev gemt"),
    "new domains": Case("/definitions/domains/new", {"names": "arkiv.dk\nco.uk"}, "names",
                        "er et offentligt suffiks, ikke et domæne, der kan registreres",
                        "domænenavne: 1 linje afvist, intet blev gemt"),
    "domain traps": Case("/definitions/domains/kunst.dk", {"comments": "", "alias": "", "crawlertraps": "x" * 1001},
                         "crawlertraps", "crawlerfælden i linje 1 er 1001 tegn lang (højst 1000)",
                         "crawlerfælden i linje 1 er 1001 tegn lang (højst 1000)"),
    "domain alias": Case("/definitions/domains/kbshop.dk", {"comments": "", "crawlertraps": "", "alias": "nosuch.dk"},
                         "alias", "domæne 'nosuch.dk' findes ikke", "Alias for: domæne 'nosuch.dk' findes ikke"),
    "configuration": Case("/definitions/domains/kb.dk/new-configuration",
                          {"name": "dyb", "template": "default_orderxml", "max_objects": "lots",
                           "seedlists": "defaultseeds"}, "max_objects", "skal være et heltal, ikke 'lots'",
                          "Maks. objekter: skal være et heltal, ikke 'lots'"),
    "seed list": Case("/definitions/domains/kb.dk/new-seedlist", {"name": "nyheder", "seeds": "http://www.dr.dk/"},
                      "seeds", "hører til domænet dr.dk, ikke kb.dk", "1 linje afvist, intet blev gemt"),
    "crawl template": Case("/definitions/templates", {"name": "kopi", "cxml": "<beans><unclosed></beans>"}, "cxml",
                           "er ikke velformet XML: linje 1, kolonne", "er ikke velformet XML: linje 1, kolonne"),
    "crawler traps": Case("/definitions/traps", {"name": "kalendere", "expressions": "y" * 1001}, "expressions",
                          "crawlerfælden i linje 1 er 1001 tegn lang (højst 1000)",
                          "crawlerfælden i linje 1 er 1001 tegn lang (højst 1000)"),
    # a channel's name names no field in its refusal (the API's answer has none): only the summary says it
    "channel": Case("/definitions/channels", {"name": "ikke gyldig", "comments": ""}, "name", "",
                    "kanalnavnet 'ikke gyldig' må kun have bogstaver, cifre og understregninger"),
    "webhook": Case("/system/webhooks", {"name": "alarmer", "url": "ftp://receiver.example.org/hook",
                                         "events": "job_failed", "secret": "s" * 24}, "url",
                    "skal begynde med http:// eller https://, ikke ftp:",
                    "URL: 'ftp://receiver.example.org/hook' skal begynde med http:// eller https://, ikke ftp:"),
    "live budget": Case("/status/jobs/{job}/changes", {"kind": "budget", "domain": "a.dk", "max_objects": "many"},
                        "max_objects", "skal være et heltal, ikke teksten 'many'",
                        "Maks. objekter: skal være et heltal, ikke teksten 'many'"),
    "live politeness": Case("/status/jobs/{job}/changes", {"kind": "politeness", "delay_factor": "500"},
                            "delay_factor", "skal være mellem 0 og", "skal være mellem 0 og"),
}


@pytest.fixture
def world(app: Flask, webui_engine: Engine, tmp_path: Any) -> dict[str, Any]:
    make_domains(webui_engine, "kb.dk", "kunst.dk", "kbshop.dk")
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    try:
        job_id = start_crawl(webui_engine, transport).job_id
    finally:
        transport.close()
    client = app.test_client()
    assert client.post("/login", data={"name": "admin", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    headers = {"X-CSRF-Token": csrf_of(client, "/")}
    for body in ({"type": "selective", "name": "redigeret", "schedule": "Once_a_day",
                  "configurations": [{"domain": "kb.dk"}]},
                 {"type": "event", "name": "begivenhed", "schedule": "Once_a_day", "seeds": ["http://www.kb.dk/"],
                  "template": "default_orderxml"}):
        answer = client.post("/api/v1/harvests", headers=headers, json=body)
        assert answer.status_code == 201, answer.get_data(as_text=True)
    client.set_cookie(COOKIE, "da")
    return {"client": client, "job": job_id, "headers": headers, "engine": webui_engine}


def _hidden(client: FlaskClient, path: str) -> dict[str, str]:
    """The hidden fields (the edition read, the CSRF token) of the form sent to ``path``, on the page that
    shows it (the path itself, or the page above it for an action of its own)."""
    for shown in (path, path.rsplit("/", 1)[0]):
        answer = client.get(shown)
        if answer.status_code != 200:
            continue
        for form in lxml_html.fromstring(answer.get_data(as_text=True)).iter("form"):
            if form.get("action") == path:
                return {field.get("name"): field.get("value", "") for field in form.iter("input")
                        if field.get("type") == "hidden" and field.get("name")}
    return {"csrf_token": csrf_of(client, "/")}


def _sent(client: FlaskClient, case: Case, job_id: int) -> str:
    path = case.path.format(job=job_id)
    answer = client.post(path, data={**_hidden(client, path), **case.data})
    assert answer.status_code in (400, 404, 409), f"{path}: {answer.status_code}"
    return answer.get_data(as_text=True)


def _text(element: Any) -> str:
    return " ".join("".join(element.itertext()).split())


def test_every_form_refuses_in_danish(world: dict[str, Any]) -> None:
    client, language, findings = world["client"], Language(), []
    written = user_data(world["engine"])
    for name, case in CASES.items():
        page = _sent(client, case, world["job"])
        root = lxml_html.fromstring(page)
        assert 'lang="da"' in page, name
        summary = " ".join(_text(element) for element in root.find_class("flash") if "error" in element.classes)
        if case.summary not in summary:
            findings.append(f"{name}: the summary is {summary!r}")
        near = [_text(element) for element in root.find_class("refusal") + root.find_class("error-message")]
        if case.beside and not any(case.beside in text for text in near):
            findings.append(f"{name}: beside the field {near}")
        for text in visible_texts(page):
            said = " ".join(text.split())
            for value in written:
                said = said.replace(value, " ")
            if language.is_english(said):
                findings.append(f"{name}: English {said!r}")
    assert not findings, "Refusals on the Danish pages:\n" + "\n".join(findings)


# The API's answer to the same wrong input as the forms above: English, word for word as before.
API_CASES = (
    ("post", "/api/v1/schedules", {"name": "natlig", "timeunit": 3, "numtimeunits": 0},
     "schedule numtimeunits must be at least 1, not 0", "numtimeunits"),
    ("post", "/api/v1/domains", {"names": ["arkiv.dk", "co.uk"]},
     "domain names: 1 line refused, nothing was stored: line 2: 'co.uk': the host 'co.uk' is a public suffix, not a "
     "domain that can be registered", "names"),
    ("patch", "/api/v1/domains/kbshop.dk", {"alias": "nosuch.dk", "edition": 1}, "no domain 'nosuch.dk'", "alias"),
    ("post", "/api/v1/domains/kb.dk/configurations", {"name": "dyb", "max_objects": "lots",
                                                      "seedlists": ["defaultseeds"], "template": "default_orderxml"},
     "max_objects must be int, not str", "max_objects"),
    ("post", "/api/v1/webhooks", {"name": "alarmer", "url": "ftp://receiver.example.org/hook",
                                  "events": ["job_failed"], "secret": "s" * 24},
     "url: 'ftp://receiver.example.org/hook' must start with http:// or https://, not ftp:", "url"),
    ("post", "/api/v1/jobs/{job}/changes", {"kind": "budget", "domain": "a.dk", "max_objects": "many"},
     "max_objects: must be a whole number, not the text 'many'", "max_objects"),
)


@pytest.mark.parametrize(("method", "path", "body", "message", "field"), API_CASES,
                         ids=[case[1] for case in API_CASES])
def test_the_api_answers_the_same_refusals_in_english(world: dict[str, Any], method: str, path: str,
                                                      body: dict[str, Any], message: str, field: str | None) -> None:
    answer = getattr(world["client"], method)(path.format(job=world["job"]), headers=world["headers"], json=body)
    assert 400 <= answer.status_code < 500, answer.get_data(as_text=True)
    error = answer.get_json()["error"]
    assert (error["message"], error["field"]) == (message, field)
    assert set(error) <= {"code", "message", "field", "lines", "refused"}, "the body has no phrase in it"


def test_a_refused_line_of_an_uploaded_domains_file_is_said_in_danish(world: dict[str, Any]) -> None:
    """The file is imported as ``harvestsuite domains import`` does; its refused lines' reasons, made while
    parsing, are the catalogue's Danish on the page, with nothing stored."""
    client = world["client"]
    path = "/definitions/domains/new"
    answer = client.post(path, data={**_hidden(client, path), "names": "",
                                     "file": (io.BytesIO(b"arkiv.dk\nco.uk\ncaf\xe9.dk\n"), "navne.txt")},
                         content_type="multipart/form-data")
    assert answer.status_code == 400, answer.status_code
    page = answer.get_data(as_text=True)
    rows = [_text(row) for row in lxml_html.fromstring(page).xpath('//*[@id="refused-lines"]//tbody/tr')]
    assert any("er et offentligt suffiks, ikke et domæne, der kan registreres" in row for row in rows), rows
    assert any("ikke UTF-8" in row for row in rows), rows
    assert not any("public suffix" in row or "not UTF-8" in row for row in rows), rows
    assert client.get("/api/v1/domains/arkiv.dk").status_code == 404, "a refused file stores nothing"


def test_the_schedule_forms_own_refusals_name_the_field_by_its_danish_label(world: dict[str, Any]) -> None:
    client = world["client"]
    path = "/definitions/schedules"
    for sent, beside, summary in (
            ({"begin": "at", "startdate": ""}, "angiv et starttidspunkt, eller vælg en anden mulighed",
             "Begynd (UTC): angiv et starttidspunkt"),
            ({"when": "at", "attime": "25:00"}, "skal være et klokkeslæt som TT:MM (24-timers ur), ikke '25:00'",
             "Tidspunkt: skal være et klokkeslæt"),
            ({"begin": "at", "startdate": "1. december 2026"}, "skal være et tidspunkt i ISO 8601", "Begynd (UTC):")):
        answer = client.post(path, data={**_hidden(client, path), **SCHEDULE, "numtimeunits": "1", **sent})
        assert answer.status_code == 400, (sent, answer.status_code)
        root = lxml_html.fromstring(answer.get_data(as_text=True))
        near = " ".join(_text(element) for element in root.find_class("refusal"))
        flashed = " ".join(_text(element) for element in root.find_class("flash"))
        assert beside in near and summary in flashed, (sent, near, flashed)
        assert "startdate" not in near + flashed and "attime" not in near + flashed, (near, flashed)
