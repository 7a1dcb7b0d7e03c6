"""A running job's page speaks Danish where the API speaks English: why a control button is disabled
(webui/api/jobcontrol.py), what holds the crawl back (webui/api/live.py) and what each change does
(webui/api/changelist.py) are phrases, English in the JSON
with their code and values beside it, said in the page's language when the page is drawn and handed to
static/live.js (data-phrases) for its updates. The job is run through the scheduler's real intake."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.scheduler.test_intake import transport  # noqa: F401
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_live_job import CONTROLLER, app, client, crawl, live, queue  # noqa: F401
from webui import qa
from webui.api import changelist, jobcontrol
from webui.api import live as live_api
from webui.language import COOKIE
from webui.live_words import TEMPLATES, phrase_templates, say

pytestmark = pytest.mark.database("users")


def test_every_phrase_has_danish_words_and_says_its_english_in_english(app):  # noqa: F811
    assert set(TEMPLATES) == (set(changelist.PHRASES) | set(jobcontrol.PHRASES) | set(live_api.PHRASES)
                              | set(qa.PHRASES))
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        danish = phrase_templates()
    # words that are the same in both languages
    alike = {"action_pause", "action_checkpoint", "action_stop", "control_with_reason", "max_bytes"}
    same = [code for code, template in TEMPLATES.items() if danish[code] == template and code not in alike]
    assert not same, f"no Danish words for {same}"
    with app.test_request_context("/"):
        assert phrase_templates() == dict(TEMPLATES)
        # a phrase from the API is said as the API says it in English, nested phrases too
        state = jobcontrol.crawler_state("CRAWLER_PAUSED", None, [])
        why = jobcontrol.refusal_phrase("pause", "STARTED", state, [])
        assert say(why.json()) == why.english() == jobcontrol.refusal("pause", "STARTED", state, []) == (
            "only a running crawler can be paused, and the crawler is paused (CRAWLER_PAUSED, reported at an "
            "unknown time)")
        assert say({"code": "from a later version", "values": {}}, "its English") == "its English"


@pytest.fixture
def operator(app, engine):  # noqa: F811
    """A client logged in as an operator, who sees the control buttons, with Danish chosen."""
    browser = app.test_client()
    assert browser.post("/login", data={"name": "operator", "password": PASSWORD,
                                        "csrf_token": csrf_of(browser)}).status_code == 302
    browser.set_cookie(COOKIE, "da")
    return browser


def page_text(response) -> str:
    """What the page shows: its text, without the live view's JSON that its script starts from."""
    shown = re.sub(r"<script.*?</script>", " ", response.get_data(as_text=True), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", shown)).split())


def button_titles(page: str) -> dict[str, str]:
    found = re.findall(r'data-action="(\w+)".*?(<button[^>]*>)', page, re.S)
    return {action: html.unescape(title.group(1)) if (title := re.search(r'title="([^"]*)"', button)) else ""
            for action, button in found}


def test_a_paused_crawl_reads_danish_on_its_page_while_its_live_view_stays_english(crawl, client,  # noqa: F811
                                                                                   operator):
    crawl.heartbeat(utcnow(), paused=True, reason="maintenance", free_disk=5_000_000, min_space_left=400_000_000)
    crawl.progress(utcnow() - timedelta(seconds=1), status="CRAWLER_PAUSED")
    crawl.frontier(utcnow(), queue("a.dk", 5, wake="2m1s"), queue("c.dk", 0))

    answer = live(client, crawl.job_id)
    english = {why["reason"]: why["text"] for why in answer["holding_back"]}
    assert english["controller_paused"] == f"Controller {CONTROLLER} is paused: maintenance."
    assert english["crawler_paused"].startswith("The crawler is paused (reported ")
    assert {why["reason"]: why["phrase"]["code"] for why in answer["holding_back"]} == {
        "disk_low": "disk_low", "controller_paused": "controller_paused", "crawler_paused": "crawler_paused"}
    assert answer["actions"]["pause"]["why_not"].startswith("only a running crawler can be paused, and the crawler "
                                                            "is paused (CRAWLER_PAUSED, reported ")
    assert answer["actions"]["pause"]["why_not_phrase"]["code"] == "refused_in_state"
    assert answer["actions"]["resume"] == {"available": True, "why_not": None, "why_not_phrase": None}

    response = operator.get(f"/status/jobs/{crawl.job_id}")
    page, text = response.get_data(as_text=True), page_text(response)
    assert f"Controlleren {CONTROLLER} er på pause: maintenance." in text
    assert f"Controlleren {CONTROLLER} mangler diskplads: 5,000,000 bytes fri i dens serverDir på h" in text
    assert re.search(r"Crawleren er på pause \(rapporteret \d{4}-\d\d-\d\d [\d:]+ UTC\): den henter intet, før den "
                     r"genoptages\.", text)
    assert "is paused" not in text and "short of disk" not in text
    titles = button_titles(page)
    assert re.fullmatch(r"kun en crawler, der kører, kan sættes på pause, og crawleren er på pause "
                        r"\(CRAWLER_PAUSED, rapporteret \d{4}-\d\d-\d\d [\d:]+ UTC\)", titles["pause"]), titles
    assert titles["checkpoint"] == "" or "kun en crawler" not in titles["checkpoint"]
    assert "resume" in titles and titles["resume"] == ""
    # the queues' states, and the words static/live.js says the phrases with
    assert "<td>slumrer</td>" in page and "<td>udtømt</td>" in page
    phrases = json.loads(html.unescape(re.search(r'data-phrases="([^"]*)"', page).group(1)))
    assert phrases["controller_paused"] == "Controlleren %(controller)s er på pause: %(reason)s."
    assert phrases["state_paused"] == "crawleren er på pause (%(status)s, rapporteret %(time)s)"
    assert set(phrases) == set(TEMPLATES)
    # the API is not the page: English whatever the cookie
    assert live(operator, crawl.job_id)["holding_back"] == answer["holding_back"]


def test_a_pending_pause_and_a_lost_controller_in_danish(crawl, client, engine, operator):  # noqa: F811
    crawl.progress(utcnow())
    with engine.begin() as conn:  # started long ago, its controller silent for 5 minutes: lost
        conn.execute(update(s.jobs).values(startdate=utcnow() - timedelta(hours=1)))
        conn.execute(update(s.harvesters).values(last_heartbeat=utcnow() - timedelta(minutes=5)))
        JobChangeRepository(conn).add(crawl.job_id, "pause", {}, "curator", utcnow())
    answer = live(client, crawl.job_id)
    assert answer["actions"]["pause"]["why_not"].startswith("a pause is pending already (change 1, made by curator")

    response = operator.get(f"/status/jobs/{crawl.job_id}")
    titles, text = button_titles(response.get_data(as_text=True)), page_text(response)
    assert re.fullmatch(r"en pause venter allerede \(ændring 1, lavet af curator \d{4}-\d\d-\d\d [\d:]+ UTC\); "
                        r"controlleren anvender den snart", titles["pause"]), titles
    assert titles["checkpoint"] == ""  # a crawler to be paused can be checkpointed
    assert re.search(rf"Controlleren {CONTROLLER} er tabt: tavs siden \d{{4}}-\d\d-\d\d [\d:]+ UTC, 5 min \(tabt "
                     r"efter [^)]+ tavshed\); tallene er, som den sidst rapporterede dem\.", text), text


def test_each_kind_of_change_reads_danish_on_the_job_page_and_english_in_the_api(app, crawl, client,  # noqa: F811
                                                                                   engine, operator):
    crawl.progress(utcnow())
    made = [("pause", {"reason": "the site asked us to"}),
            ("reject", {"regex": r".*\.iso$", "domain": "a.dk"}),
            ("unreject", {"regex": r".*\.iso$"}),
            ("delete_queued", {"regex": r".*/calendar/.*"}),
            ("budget", {"domain": "a.dk", "max_objects": 500, "max_bytes": -1}),
            ("add_uris", {"uris": [f"http://a.dk/{n}" for n in range(5)]}),
            ("politeness", {"delay_factor": 2.5, "max_per_host": 3})]
    with engine.begin() as conn:
        for kind, payload in made:
            JobChangeRepository(conn).add(crawl.job_id, kind, payload, "curator", utcnow())
    changes = live(client, crawl.job_id)["changes"]
    assert [change["summary"] for change in changes] == [
        "pause: the site asked us to",
        "reject URIs matching .*\\.iso$ on a.dk",
        "stop rejecting URIs matching .*\\.iso$",
        "delete queued URIs matching .*/calendar/.*",
        "budget of a.dk: objects 500, bytes unlimited",
        "add 5 URIs: http://a.dk/0, http://a.dk/1, http://a.dk/2 and 2 more",
        "politeness: delay factor 2.5, at most 3 at once per host"]
    with app.test_request_context("/"):
        assert [say(change["summary_phrase"], change["summary"]) for change in changes] == [
            change["summary"] for change in changes]

    page = operator.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    shown = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())
             for cell in re.findall(r'<td class="change-what">(.*?)</td>', page, re.S)]
    assert shown == [
        "pause: the site asked us to",
        "afvis URI'er, der passer på .*\\.iso$, på a.dk",
        "hold op med at afvise URI'er, der passer på .*\\.iso$",
        "slet URI'er i kø, der passer på .*/calendar/.*",
        "budget for a.dk: objekter 500, bytes ubegrænset",
        "tilføj 5 URI'er: http://a.dk/0, http://a.dk/1, http://a.dk/2 og 2 mere",
        "høflighed: forsinkelsesfaktor 2.5, højst 3 ad gangen pr. vært"], shown
