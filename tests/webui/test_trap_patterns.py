"""Crawler traps given through the API and the forms: a pattern RE2 cannot run is refused with 400 naming
the field, the line and the reason, and nothing is stored; a pattern that would backtrack catastrophically
in Java is taken, because every trap runs in RE2 (harvestdef/patterns.py)."""

from __future__ import annotations

import re

import pytest

from harvestdef.patterns import CompiledPattern, compile_pattern
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository

REDOS = "(.|.)*X"


def make_harvest(api, engine) -> int:
    with engine.begin() as conn:
        DomainRepository(conn).create("a.dk")
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "daily", "schedule": "Once_a_day",
        "configurations": [{"domain": "a.dk", "configuration": "defaultconfig"}]})
    assert created.status_code == 201, created.get_json()
    return created.get_json()["edition"]


def stored_harvest_traps(engine) -> tuple[str, ...]:
    with engine.connect() as conn:
        return HarvestRepository(conn).get("daily").crawlertraps


def test_api_refuses_a_trap_re2_cannot_run_naming_field_line_and_reason(api, webui_engine):
    edition = make_harvest(api, webui_engine)
    saved = api("curator", "patch", "/api/v1/harvests/daily",
                json={"edition": edition, "crawlertraps": ".*/calendar/.*"})
    assert saved.status_code == 200, saved.get_json()
    edition = saved.get_json()["edition"]
    refused = api("curator", "patch", "/api/v1/harvests/daily",
                  json={"edition": edition, "crawlertraps": ".*/ok/.*\n.*/(?=x).*\n", "comments": "changed"})
    assert refused.status_code == 400
    error = refused.get_json()["error"]
    assert error["field"] == "crawlertraps"
    assert "line 2" in error["message"] and "lookahead '(?=' at column 4" in error["message"]
    assert stored_harvest_traps(webui_engine) == (".*/calendar/.*",)
    assert api("curator", "get", "/api/v1/harvests/daily").get_json()["comments"] == ""  # nothing stored

    refused = api("curator", "patch", "/api/v1/domains/a.dk",
                  json={"edition": 1, "crawler_traps": [".*/ok/.*", r".*(/[^/]+)\1.*"], "comments": "x"})
    assert refused.status_code == 400
    error = refused.get_json()["error"]
    assert error["field"] == "crawler_traps" and "line 2" in error["message"]
    assert "backreference" in error["message"]
    domain = api("curator", "get", "/api/v1/domains/a.dk").get_json()
    assert domain["crawler_traps"] == [] and domain["comments"] == "" and domain["edition"] == 1


@pytest.mark.timeout(60)
def test_a_catastrophic_trap_is_taken_and_runs_in_linear_time(api, webui_engine):
    edition = make_harvest(api, webui_engine)
    saved = api("curator", "patch", "/api/v1/harvests/daily", json={"edition": edition, "crawlertraps": REDOS})
    assert saved.status_code == 200, saved.get_json()
    assert stored_harvest_traps(webui_engine) == (REDOS,)
    # what the engine will run on each URL: RE2, whose matching is linear in the URL whatever the pattern (a
    # backtracking matcher would take 2**20000 steps here; the timeout mark stops a hang)
    compiled = compile_pattern(REDOS)
    assert isinstance(compiled, CompiledPattern)
    assert compiled.fullmatch("http://a.dk/" + "a" * 20_000) is None


def test_forms_refuse_with_400_naming_the_line_and_store_nothing(login, api, webui_engine):
    make_harvest(api, webui_engine)
    client = login("curator")
    page = client.get("/definitions/harvests/daily").get_data(as_text=True)
    edition = re.search(r'name="edition" value="(\d+)"', page).group(1)
    refused = client.post("/definitions/harvests/daily", data={
        "csrf_token": client.csrf, "edition": edition, "comments": "changed", "schedule": "Once_a_day",
        "crawlertraps": ".*/ok/.*\n.*\\p{InGreek}.*"})
    assert refused.status_code == 400
    text = refused.get_data(as_text=True)
    assert "Crawler traps: crawler trap on line 2" in text and "RE2 has no Unicode blocks" in text
    assert stored_harvest_traps(webui_engine) == ()

    refused = client.post("/definitions/domains/a.dk", data={
        "csrf_token": client.csrf, "edition": "1", "comments": "changed", "crawlertraps": "a++\n(a)\\1\n"})
    assert refused.status_code == 400
    text = refused.get_data(as_text=True)
    assert "Crawler traps: crawler trap on line 2" in text and "backreference" in text
    with webui_engine.connect() as conn:
        domain = DomainRepository(conn).get("a.dk")
    assert domain.crawlertraps == () and domain.comments == "" and domain.edition == 1

    refused = client.post("/definitions/traps", data={
        "csrf_token": client.csrf, "name": "calendars", "expressions": ".*/calendar/.*\n[a-z&&[^e]]\n"})
    assert refused.status_code == 400
    text = refused.get_data(as_text=True)
    assert "Expressions: crawler trap on line 2" in text and "class intersection" in text
    with webui_engine.connect() as conn:
        assert GlobalCrawlerTrapRepository(conn).all_lists() == []


def test_a_template_with_a_regex_the_engine_cannot_run_is_refused(api, shared_dir):
    rule = ('<bean class="org.archive.modules.deciderules.MatchesListRegexDecideRule">'
            '<property name="regexList"><list><value>.*/ok/.*</value>\n<value>{}</value></list></property></bean>')
    for regex in (r".*[a[^b]].*", r".*\p{InGreek}"):
        cxml = f'<?xml version="1.0"?>\n<beans>\n{rule.format(regex)}\n</beans>\n'
        refused = api("admin", "post", "/api/v1/templates", json={"name": "traps", "cxml": cxml})
        assert refused.status_code == 400
        error = refused.get_json()["error"]
        assert error["field"] == "cxml" and "the regex on line 4 cannot be used" in error["message"]
    assert api("admin", "get", "/api/v1/templates/traps").status_code == 404
    # NetarchiveSuite's own template: its lookahead traps run in the engine's budgeted matcher
    nas = (shared_dir / "fixtures/heritrix3/netarchivesuite-default_orderxml.cxml").read_text(encoding="utf-8")
    assert api("admin", "post", "/api/v1/templates", json={"name": "nas", "cxml": nas}).status_code == 201
    fine = f'<?xml version="1.0"?>\n<beans>\n{rule.format("%{CRAWLERTRAPS_PLACEHOLDER}")}\n</beans>\n'
    assert api("admin", "post", "/api/v1/templates", json={"name": "fine", "cxml": fine}).status_code == 201


def test_every_refused_trap_line_is_named(api, login, webui_engine):
    edition = make_harvest(api, webui_engine)
    refused = api("curator", "patch", "/api/v1/harvests/daily",
                  json={"edition": edition, "crawlertraps": ".*/(?=x).*\n.*/ok/.*\n(a)\\1\n\n.*\\p{InGreek}.*"})
    error = refused.get_json()["error"]
    assert refused.status_code == 400 and error["field"] == "crawlertraps"
    assert [int(line) for line in re.findall(r"crawler trap on line (\d+)", error["message"])] == [1, 3, 5]
    assert "lookahead" in error["message"] and "backreference" in error["message"]
    assert "RE2 has no Unicode blocks" in error["message"]
    assert stored_harvest_traps(webui_engine) == ()

    client = login("curator")
    page = client.post("/definitions/domains/a.dk", data={
        "csrf_token": client.csrf, "edition": "1", "crawlertraps": "a++\n(a)\\1\n[a-z&&[^e]]"})
    text = page.get_data(as_text=True)
    assert page.status_code == 400
    assert "crawler trap on line 2" in text and "crawler trap on line 3" in text
