"""The reasons for a harvest's state and a job's refusal (harvestdef/harvestreasons.py) are stored in English
with their phrase, and said in the page's language by code (webui/harvest_reasons.py): every template has its
Danish words, every reason function's phrase reads Danish with its figures kept, and a real tick's reasons
read Danish on "Why harvests wait", the harvest list, the harvest's page and the overview, while the API keeps
the English it stored beside the phrase."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest

from harvestdef import harvestreasons as reasons
from harvestdef.repositories.domains import DomainRepository
from scheduler.dedupsources import JobSources, refusal_of
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from webui.harvest_reasons import reason, state_name

T1, T2 = datetime(2026, 11, 27, 4, 0, tzinfo=UTC), datetime(2026, 11, 28, 4, 0, tzinfo=UTC)
OUTLOOK = reasons.runs_used("Once", 1)
# A job's refusal as scheduler.dedupsources.refusal_of words it, which a run's reason quotes
REFUSALS = [refusal_of(JobSources(40, (), 10, 9, 4, (), (4, 5)), 90),
            refusal_of(JobSources(41, (), 3000, 2900, 1000, (), tuple(range(1, 23))), 70)]

# Each reason function, written with figures that take each of its wordings.
WRITTEN = {
    "runs_used": [reasons.runs_used("Once", 1), reasons.runs_used("Twice", 2)],
    "schedule_ended": [reasons.schedule_ended("ended_2020", datetime(2020, 1, 1, tzinfo=UTC))],
    "no_event_left": [reasons.no_event_left("s", T2)],
    "snapshot_has_run": [reasons.snapshot_has_run()],
    "next_date_cleared": [reasons.next_date_cleared()],
    "next_run": [reasons.next_run(T1)],
    "run_asked_for": [reasons.run_asked_for()],
    "postponed": [reasons.postponed("FOCUSED")],
    "previous_step_without_jobs": [reasons.previous_step_without_jobs(7)],
    "previous_step_unfinished": [reasons.previous_step_unfinished(7, 2, 5)],
    "never_runs": [reasons.never_runs(reasons.schedule_ended("ended_2020", datetime(2020, 1, 1, tzinfo=UTC)))],
    "finished": [reasons.finished(OUTLOOK, 1, T1), reasons.finished(OUTLOOK, 3, None)],
    "generating": [reasons.generating(T1)],
    "generated": [reasons.generated(1, 1, T1, T2), reasons.generated(2, 12_345, T1, None)],
    "run_jobs_wait": [reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(2, 4, 1))],
    "sources_wait_for_jobs": [reasons.sources_wait_for_jobs(2, 9, 3)],
    "sources_refused": [reasons.sources_refused(1, 2, REFUSALS[0])],
    "job_refusal": REFUSALS,
    "generation_failed": [reasons.generation_failed("weekly", 4, None, "KeyError: 'x'"),
                          reasons.generation_failed("weekly", 4, "DatabaseError: gone", "KeyError: 'x'")],
}
HELPERS = {"TEMPLATES", "joined", "stored", "from_stored"}


def test_every_reason_function_is_written_here():
    assert set(WRITTEN) == set(reasons.__all__) - HELPERS, (
        "a reason function of harvestdef/harvestreasons.py is not exercised here: add it")


def test_every_template_has_its_danish_words(app):
    from flask_babel import gettext
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        untranslated = [code for code, template in reasons.TEMPLATES.items()
                        if code != "parts" and gettext(template) == template]
    assert untranslated == [], "give these templates their Danish words in webui/translations"


@pytest.mark.parametrize("written", [written for wordings in WRITTEN.values() for written in wordings] + [
    reasons.joined(reasons.run_asked_for(), reasons.postponed("SNAPSHOT"),
                   reasons.run_jobs_wait(2, reasons.sources_refused(1, 1, REFUSALS[1])),
                   reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(1, 2, 2)))], ids=str)
def test_every_reason_reads_danish_with_its_figures_and_english_as_stored(app, written):
    english = str(written)
    stored = reasons.stored(written)  # as the scheduler stores it, and the API answers it
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        danish = reason(stored, english)
        assert reason(written) == danish
    assert danish != english
    # the figures, names and times stay; the English words go
    for figure in re.findall(r"\d[\d,]*|FOCUSED|SNAPSHOT|DatabaseError: gone|KeyError: 'x'", english):
        assert figure in danish, (figure, danish)
    leftover = set(re.findall(r"[a-z]{4,}", re.sub(r"satisfactorythresholdpercentage|KeyError|DatabaseError|"
                                                   r"ended_|weekly|gone", "", danish)))
    assert not leftover & {"next", "waiting", "previous", "harvest", "schedule", "finished", "stored",
                           "captures", "deduplication", "refused", "generation", "postponed", "never"}, danish
    with app.test_request_context("/"):
        assert reason(stored, english) == english


def test_the_danish_words_of_a_few_reasons(app):
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        assert reason(reasons.joined(reasons.run_asked_for(), reasons.postponed("FOCUSED"))) == (
            "en kørsel er bestilt; udskudt: ingen registreret høstcontroller betjener kanalen FOCUSED")
        assert reason(reasons.generated(1, 2, T1, T2)) == (
            "kørsel 1: 2 job 2026-11-27 04:00:00 UTC; næste kørsel 2026-11-28 04:00:00 UTC")
        assert reason(reasons.finished(OUTLOOK, 1, T1)) == (
            "skemaet Once tillader 1 kørsel, og den har kørt; sidste kørsel 1 2026-11-27 04:00:00 UTC")
        assert reason(reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(1, 4, 2))) == (
            "jobbene i kørsel 3 venter: 1 af dens 4 job venter på, at de tidligere job, der høstede deres domæner, "
            "bliver færdige: 2 er ikke færdige endnu")
        assert [state_name(state) for state in ("waiting", "generated", "finished", "something new")] == [
            "venter", "genereret", "færdig", "something new"]
        # a reason stored without its phrase, or with a phrase of another version, shows its English
        assert reason(None, "a reason not known") == "a reason not known"
        assert reason('{"code": "from_a_later_version", "values": {}}', "its English") == "its English"
        assert reason("not JSON", "its English") == "its English"


def words(client, path: str) -> str:
    page = client.get(path).get_data(as_text=True)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_a_real_ticks_reasons_read_danish_on_the_pages_and_english_in_the_api(api, login, webui_engine):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("a.dk")
    assert api("curator", "post", "/api/v1/schedules", json={
        "name": "ended_2020", "timeunit": "DAILY", "startdate": "2019-06-01T00:00:00Z",
        "enddate": "2020-01-01T00:00:00Z"}).status_code == 201
    for name, schedule in (("too_late", "ended_2020"), ("daily", "Once_a_day")):
        assert api("curator", "post", "/api/v1/harvests", json={
            "type": "selective", "name": name, "schedule": schedule, "active": True,
            "configurations": [{"domain": "a.dk"}]}).status_code == 201
    generating = Ticker(webui_engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False),
                        Notifier())
    report = generating.tick()
    assert list(report.generated) == ["daily"]
    client = login("curator")
    client.post("/language", data={"language": "da", "csrf_token": client.csrf})

    harvests = words(client, "/definitions/harvests")
    assert re.search(r"daily .*genereret kørsel 1: 1 job \d{4}-\d\d-\d\d [\d:]+ UTC; næste kørsel ", harvests)
    assert "generated" not in harvests and "next run at" not in harvests

    # no controller serves the channel now: a harvest created since is postponed, the generated one waits
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "postponed_one", "schedule": "Once_a_day", "active": True,
        "configurations": [{"domain": "a.dk"}]}).status_code == 201
    report = Ticker(webui_engine, GenerationOptions(), TickOptions(), Notifier()).tick()
    assert report.waiting["postponed_one"].startswith("postponed: no registered harvest controller serves channel")
    assert report.waiting["daily"].startswith("next run at ")

    waiting = words(client, "/status/waiting")
    # a harvest that never runs waits for nothing: named below the table, why in Danish as its title
    assert "1 høstning kører ikke igen: too_late" in waiting and "too_late venter" not in waiting
    assert ('title="venter: kører aldrig: skemaet ended_2020 sluttede 2020-01-01 00:00:00 UTC; giv den et skema '
            'med kommende kørsler">too_late</a>') in client.get("/status/waiting").get_data(as_text=True)
    assert re.search(r"daily venter næste kørsel \d{4}-\d\d-\d\d [\d:]+ UTC", waiting), waiting
    assert "postponed_one venter udskudt: ingen registreret høstcontroller betjener kanalen " in waiting
    for english in ("will never run", "give it a schedule", "next run at", "postponed:", "waiting"):
        assert english not in waiting, english
    for path in ("/definitions/harvests", "/definitions/harvests/postponed_one", "/"):
        page = words(client, path)
        assert "udskudt: ingen registreret høstcontroller betjener kanalen" in page, path
        assert "postponed:" not in page and "will never run" not in page, path

    listed = {row["harvest"]: row for row in api("curator", "get", "/api/v1/waiting-harvests").get_json()["items"]}
    assert listed["too_late"]["state"] == "waiting"
    assert listed["too_late"]["reason"] == report.waiting["too_late"]
    assert listed["too_late"]["reason_phrase"]["code"] == "parts"  # never runs; give it a schedule
    assert listed["too_late"]["reason_phrase"]["values"]["first"]["code"] == "never_runs"
    assert listed["postponed_one"]["reason"].startswith("postponed: no registered harvest controller serves")


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_deduplication_index_refusal_is_said_in_the_pages_language(app, refusal):
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        danish = reason(reasons.run_jobs_wait(3, reasons.sources_refused(1, 2, refusal)))
    assert danish.startswith("jobbene i kørsel 3 venter: deduplikering afvist for 1 af dens 2 job: de tidligere "
                             "høstninger af kun ")
    english = re.findall(r"[a-z]+", re.sub(r"satisfactorythresholdpercentage", "", danish))
    assert not {"the", "of", "entries", "could", "more", "no", "stored", "unreadable"} & set(english), danish
