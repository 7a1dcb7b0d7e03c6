"""The pages' language (webui/language.py): the remembered choice, else the browser's Accept-Language among the
shipped languages, else English; the switch in every page's footer; the JSON API in English whatever is asked."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from flask import render_template_string
from sqlalchemy import insert, select

from harvestdef import harvestreasons
from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.users import UserRepository
from harvestdef.schedules import Schedule, TimeUnit
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_jobs import T0, seed
from webui.formatting import count, size
from webui.harvest_reasons import reason
from webui.language import COOKIE


def heading(response) -> str:
    match = re.search(r"<h1>(.*?)</h1>", response.get_data(as_text=True), re.S)
    assert match, response.get_data(as_text=True)[:500]
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split())


def page_language(response) -> str:
    return re.search(r'<html lang="([^"]+)">', response.get_data(as_text=True)).group(1)


def test_english_is_the_default(app):
    client = app.test_client()
    response = client.get("/login")
    assert heading(response) == "Log in" and page_language(response) == "en"
    # a language that is not shipped falls back to English too
    response = client.get("/login", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    assert heading(response) == "Log in" and page_language(response) == "en"


def test_accept_language_picks_danish_among_the_shipped_languages(app):
    client = app.test_client()
    for header in ("da", "da-DK,da;q=0.9,en;q=0.8", "fr-FR,fr;q=0.9,da;q=0.5"):
        response = client.get("/login", headers={"Accept-Language": header})
        assert heading(response) == "Log ind", header
        assert page_language(response) == "da"
        assert "Adgangskode" in response.get_data(as_text=True)


def test_a_view_says_its_flash_message_in_the_chosen_language(app):
    client = app.test_client()
    token = csrf_of(client)
    response = client.post("/login", data={"name": "curator", "password": "wrong", "csrf_token": token},
                           headers={"Accept-Language": "da"})
    assert response.status_code == 401
    assert "Ukendt bruger eller forkert adgangskode." in response.get_data(as_text=True)


def test_the_switch_remembers_the_choice_across_requests_over_accept_language(login):
    client = login("curator")
    response = client.post("/language", data={"language": "da", "next": "/status/", "csrf_token": client.csrf},
                           headers={"Accept-Language": "en"})
    assert response.status_code == 302 and response.headers["Location"] == "/status/"
    assert f"{COOKIE}=da" in response.headers["Set-Cookie"]
    english_browser = {"Accept-Language": "en-GB,en;q=0.9"}
    assert heading(client.get("/status/", headers=english_browser)) == "Høststatus"
    home = client.get("/", headers=english_browser)
    text = home.get_data(as_text=True)
    assert heading(home) == "Oversigt"
    assert all(f">{word}</a>" in text for word in ("Oversigt", "Definitioner", "Høststatus", "Historik"))
    assert "Logget ind som curator." in text
    # and back: the choice of English holds in a Danish browser
    client.post("/language", data={"language": "en", "next": "/", "csrf_token": client.csrf})
    assert heading(client.get("/", headers={"Accept-Language": "da"})) == "Overview"


def test_the_switch_works_before_login_and_keeps_to_this_site(app):
    client = app.test_client()
    token = csrf_of(client)
    for elsewhere in ("https://evil.example/", "//evil.example/", "/\\evil.example/", "evil"):
        response = client.post("/language", data={"language": "da", "next": elsewhere, "csrf_token": token})
        assert response.status_code == 302 and response.headers["Location"] == "/", elsewhere
    assert heading(client.get("/login")) == "Log ind"
    response = client.post("/login", data={"name": "curator", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302
    assert heading(client.get("/")) == "Oversigt"


def test_the_switch_refuses_an_unknown_language_and_a_missing_csrf_token(login):
    client = login("curator")
    response = client.post("/language", data={"language": "xx", "csrf_token": client.csrf})
    assert response.status_code == 400
    refusal = html.unescape(response.get_data(as_text=True))
    assert "language 'xx' is not one of the shipped languages (en, da)" in refusal
    response = client.post("/language", data={"language": "da"})
    assert response.status_code == 400 and "CSRF" in response.get_data(as_text=True)
    assert COOKIE not in response.headers.get("Set-Cookie", "")
    assert heading(client.get("/")) == "Overview"

    # with Danish chosen, the refusals are Danish too
    client.post("/language", data={"language": "da", "csrf_token": client.csrf})
    refusal = html.unescape(client.post("/language", data={"language": "xx", "csrf_token": client.csrf})
                            .get_data(as_text=True))
    assert "sproget 'xx' er ikke et af de medfølgende sprog (en, da)" in refusal, refusal
    refusal = html.unescape(client.post("/language", data={"language": "en"}).get_data(as_text=True))
    assert "formularen language har en manglende eller forkert CSRF-nøgle: genindlæs siden" in refusal, refusal


def test_the_api_stays_english_whatever_the_page_language(api, login):
    client = login("curator")
    client.post("/language", data={"language": "da", "csrf_token": client.csrf})
    response = client.get("/api/v1/jobs/999999", headers={"Accept-Language": "da"})
    assert response.status_code == 404
    message = response.get_json()["error"]["message"]
    assert "999999" in message and re.fullmatch(r"[ -~]+", message), message  # English, plain ASCII
    response = api("curator", "get", "/api/v1/jobs/999999", headers={"Accept-Language": "da"})
    assert response.get_json()["error"]["message"] == message


def test_plurals_and_figures_follow_the_language(app):
    template = "{{ ngettext('%(num)s run', '%(num)s runs', n, num=n|count) }}"
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        assert [render_template_string(template, n=n) for n in (1, 2, 12345)] == [
            "1 kørsel", "2 kørsler", "12,345 kørsler"]
        assert count(-1) == "ubegrænset" and size(-1) == "ubegrænset"
        # times are not translated: the one UTC format in every language
        assert render_template_string("{{ t|when }}", t="2026-11-23T04:01:55Z").endswith(
            "<span>2026-11-23</span> <span>04:01:55 UTC</span></time>")
    with app.test_request_context("/"):
        assert [render_template_string(template, n=n) for n in (1, 2)] == ["1 run", "2 runs"]
        assert count(-1) == "unlimited"


def test_the_job_list_the_job_page_and_their_messages_in_danish(login, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.FAILED])
    with webui_engine.begin() as conn:
        alpha = conn.scalar(select(s.configurations.c.config_id).join(
            s.domains, s.domains.c.domain_id == s.configurations.c.domain_id).where(s.domains.c.name == "alpha.dk"))
        conn.execute(insert(s.historyinfo).values(
            stopreason=int(StopReason.OBJECT_LIMIT), objectcount=5000, bytecount=12_345_678, config_id=alpha,
            harvest_id=1, job_id=1, harvest_time=T0, novel_objects=4990, novel_bytes=12_000_000,
            duplicate_objects=10, duplicate_bytes=345_678))
    client = login("operator")
    client.post("/language", data={"language": "da", "csrf_token": client.csrf})

    job = client.get("/status/jobs/1")
    page = re.sub(r"\s+", " ", job.get_data(as_text=True))
    assert heading(job) == "Job 1 DONE"
    assert "Høstet: 5,000 objekter, 12.3 MB, heraf 10 objekter dubletter" in page
    assert "Domæner og konfigurationer (2)" in page and ">Stopårsag<" in page
    assert "Seeds (2)" in page and "Filer i arkivlageret" in page

    listed = client.get("/status/?status=FAILED")
    page = re.sub(r"\s+", " ", listed.get_data(as_text=True))
    assert heading(listed) == "Høststatus"
    assert "Genstart markerede" in page and "Ingen job passer." not in page

    answer = client.post("/status/jobs/actions", data={"csrf_token": client.csrf, "action": "reject",
                                                       "job_id": ["2", "3"]}, follow_redirects=True)
    assert "Afvis: udført for jobbene 2, 3." in answer.get_data(as_text=True)
    answer = client.post("/status/jobs/actions", data={"csrf_token": client.csrf, "action": "restart"},
                         follow_redirects=True)
    assert "Ingen job var markeret." in answer.get_data(as_text=True)


def test_the_change_history_and_a_schedule_frequency_in_danish_and_english(api, login):
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]}).status_code in (200, 201)
    assert api("curator", "post", "/api/v1/schedules", json={
        "name": "mondays-0230", "timeunit": "WEEKLY", "numtimeunits": 1, "anytime": False, "ondayofweek": 2,
        "onhour": 2, "onminute": 30}).status_code == 201
    assert api("curator", "post", "/api/v1/schedules", json={
        "name": "Every_5_minutes", "timeunit": "MINUTE", "numtimeunits": 5}).status_code == 201
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "weekly", "schedule": "Once_a_day", "comments": "first words",
        "configurations": [{"domain": "kb.dk"}]}).status_code == 201
    current = api("curator", "get", "/api/v1/harvests/weekly").get_json()["edition"]
    assert api("curator", "patch", "/api/v1/harvests/weekly", json={
        "edition": current, "comments": "new words", "schedule": "mondays-0230"}).status_code == 200
    client = login("curator")

    def words(path: str, language: str) -> str:
        page = client.get(path, headers={"Accept-Language": language}).get_data(as_text=True)
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split()).replace(" :", ":")

    danish = words("/definitions/harvests/weekly", "da")
    history = danish[danish.index("Ændringshistorik"):]
    assert "curator ændret Kommentarer: first words → new words" in history, history
    assert "Skema: Once a day → mondays-0230" in history and "oprettet" in history and "Navn: weekly" in history
    assert "changed" not in history and "Comments" not in history
    english = words("/definitions/harvests/weekly", "en")
    assert "curator changed Comments: first words → new words" in english[english.index("Change history"):]

    danish = words("/definitions/schedules", "da")
    assert "mondays-0230 hver uge om mandagen kl. 02:30" in danish
    assert "Every 5 minutes hvert 5. minut" in danish and "Once a day hver dag" in danish
    reader = login("archivist")  # who may not edit reads the schedule in words
    page = reader.get("/definitions/schedules/mondays-0230", headers={"Accept-Language": "da"})
    assert "Kører hver uge om mandagen kl. 02:30." in page.get_data(as_text=True)
    english = words("/definitions/schedules", "en")
    assert "mondays-0230 every week on Monday at 02:30" in english and "Every 5 minutes every 5 minutes" in english


def test_why_a_harvest_runs_no_more_in_danish_as_harvestdef_words_it(app):
    now, zone = datetime(2026, 11, 27, 12, 0, tzinfo=UTC), ZoneInfo("Europe/Copenhagen")
    outlooks = [Schedule("Once", TimeUnit.DAILY, 1, maxrepeats=1).end_reason(1, now, zone),
                Schedule("Twice", TimeUnit.DAILY, 1, maxrepeats=2).end_reason(2, now, zone),
                Schedule("Past", TimeUnit.DAILY, 1, enddate=datetime(2026, 1, 1, tzinfo=UTC)).end_reason(0, now, zone),
                harvestreasons.snapshot_has_run()]
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        assert [reason(outlook) for outlook in outlooks] == [
            "skemaet Once tillader 1 kørsel, og den har kørt", "skemaet Twice tillader 2 kørsler, og de har alle kørt",
            "skemaet Past sluttede 2026-01-01 00:00:00 UTC", "en tværsnitshøstning kører én gang, og den har kørt"]
        # a reason stored without its phrase is shown as the English it is
        assert reason(None, "a reason not known") == "a reason not known"
    with app.test_request_context("/"):
        assert [reason(outlook) for outlook in outlooks] == [str(outlook) for outlook in outlooks] == [
            "schedule Once allows 1 run, and all of them have run",
            "schedule Twice allows 2 runs, and all of them have run",
            "schedule Past ended on 2026-01-01 00:00:00 UTC", "a snapshot harvest runs once, and it has run"]


def visible_words(response) -> str:
    """A page's text and the words of its titles, labels and placeholders, without its scripts' data."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", response.get_data(as_text=True), flags=re.S)
    attributes = " ".join(re.findall(r'(?:title|aria-label|placeholder|alt)="([^"]*)"', page))
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page) + " " + attributes).split())


def test_every_page_without_parameters_and_a_few_with_speak_danish(app, api, login, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.NEW])
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "snapshot", "name": "snap", "active": False}).status_code == 201
    assert api("admin", "post", "/api/v1/webhooks", json={
        "name": "ops", "url": "https://receiver.example.org/hook", "secret": "a secret of sixteen",
        "events": ["job_failed"]}).status_code == 201
    with webui_engine.begin() as conn:  # a token never used: its "last used" in words
        UserRepository(conn).create_token("admin")
    client = login("admin")
    client.set_cookie(COOKIE, "da")
    paths = {str(rule) for rule in app.url_map.iter_rules() if "GET" in rule.methods and not rule.arguments
             and not str(rule).startswith(("/api/", "/static/", "/logout")) and rule.endpoint != "status.jobs_prefix"}
    paths |= {"/status/jobs/1", "/status/jobs/2", "/definitions/harvests/daily", "/definitions/harvests/snap",
              "/definitions/schedules/Once_a_day", "/history/domains/alpha.dk", "/history/harvests/daily",
              "/definitions/harvests/new/selective", "/system/webhooks/1", "/api/v1/docs",
              "/system/users/admin/tokens"}
    # English that these pages said whatever the language, in the words they say it in now
    english = ("minutes", "hours", "weeks", "months", "History of", "role of", "new password of",
               "next tick makes one run", "Another configuration of", "out of this harvest", "(its default",
               "a job failed", "line cut at", "no QA report", "Rendered by Swagger UI", "Everything these pages",
               "type a new one to replace it", "Deactivate", "Activate", "inactive", "never")
    pages = {}
    for path in sorted(paths):
        response = client.get(path)
        assert response.status_code == 200, path
        pages[path] = visible_words(response)
        found = [phrase for phrase in english if phrase in pages[path]]
        assert not found, (path, found)
    for path in ("/definitions/schedules", "/definitions/schedules/Once_a_day"):
        units = re.search(r'<select name="timeunit">(.*?)</select>', client.get(path).get_data(as_text=True), re.S)
        options = dict(re.findall(r'<option value="(\w+)"[^>]*>([^<]*)</option>', units.group(1)))
        assert options == {"MINUTE": "minutter", "HOURLY": "timer", "DAILY": "dage", "WEEKLY": "uger",
                           "MONTHLY": "måneder"}, (path, options)
    assert "job 1 har ingen QA-rapport: dets metadata-WARC er ikke i arkivlageret" in pages["/status/jobs/1"]
    assert "Historik for alpha.dk" in pages["/history/domains/alpha.dk"]
    assert "rolle for curator" in pages["/system/users"] and "et job fejlede" in pages["/system/webhooks/1"]
    assert "Vist med Swagger UI" in pages["/api/v1/docs"] and "Deaktivér" in pages["/definitions/templates"]
    assert "aldrig" in pages["/system/users/admin/tokens"]
    # the system page's title is its name, not its notifications card
    system = client.get("/system").get_data(as_text=True)
    assert re.search(r"<title>System · HarvestSuite</title>", system), re.search(r"<title>.*?</title>", system, re.S)
