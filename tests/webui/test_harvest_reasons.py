"""The scheduler's reasons for a harvest's state (scheduler/reasons.py), stored in English, are said in the page's
language (webui/harvest_reasons.py): every reason the scheduler can write is known to the page's table, and a
real tick's reasons read Danish on "Why harvests wait", the harvest list, the harvest's page and the
overview, while the API keeps the English it stored."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest

from harvestdef.repositories.domains import DomainRepository
from scheduler import reasons
from scheduler.dedupsources import JobSources, refusal_of
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from webui.harvest_reasons import state_name, state_reason, unknown_parts

T1, T2 = datetime(2026, 11, 27, 4, 0, tzinfo=UTC), datetime(2026, 11, 28, 4, 0, tzinfo=UTC)
OUTLOOK = "schedule Once allows 1 run, and all of them have run"

# Each reason function of the scheduler, written with figures that take each of its wordings.
WRITTEN = {
    "next_run": [reasons.next_run(T1)],
    "run_asked_for": [reasons.run_asked_for()],
    "postponed": [reasons.postponed("FOCUSED")],
    "previous_step_without_jobs": [reasons.previous_step_without_jobs(7)],
    "previous_step_unfinished": [reasons.previous_step_unfinished(7, 2, 5)],
    "never_runs": [reasons.never_runs("schedule ended_2020 ended on 2020-01-01 00:00:00 UTC")],
    "finished": [reasons.finished(OUTLOOK, 1, T1), reasons.finished(OUTLOOK, 3, None)],
    "generating": [reasons.generating(T1)],
    "generated": [reasons.generated(1, 1, T1, T2), reasons.generated(2, 12_345, T1, None)],
    "run_jobs_wait": [reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(2, 4, 1))],
    "sources_wait_for_jobs": [reasons.sources_wait_for_jobs(2, 9, 3)],
    "sources_refused": [reasons.sources_refused(1, 2, "3 of 9 domains, 90 % are needed")],
    "generation_failed": [reasons.generation_failed("weekly", 4, None, "KeyError: 'x'"),
                          reasons.generation_failed("weekly", 4, "DatabaseError: gone", "KeyError: 'x'")],
}
HELPERS = {"SEPARATOR", "joined"}
# A job's refusal as scheduler.dedupsources.refusal_of words it, which the reason quotes
REFUSALS = [refusal_of(JobSources(40, (), 10, 9, 4, (), (4, 5)), 90),
            refusal_of(JobSources(41, (), 3000, 2900, 1000, (), tuple(range(1, 23))), 70)]


def test_every_reason_function_of_the_scheduler_is_written_here():
    assert set(WRITTEN) == set(reasons.__all__) - HELPERS, (
        "a reason function of scheduler/reasons.py is not exercised here: add it, and its words to "
        "webui/harvest_reasons.py")


@pytest.mark.parametrize("reason", [reason for written in WRITTEN.values() for reason in written] + [
    reasons.joined(reasons.run_asked_for(), reasons.postponed("SNAPSHOT"),
                   reasons.run_jobs_wait(2, reasons.sources_refused(1, 1, "too few")),
                   reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(1, 2, 2)))])
def test_the_page_knows_every_part_of_every_reason_the_scheduler_writes(app, reason):
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        assert unknown_parts(reason) == []
        danish = state_reason(reason)
    assert danish != reason
    # the figures, names and times stay; the English words go
    for figure in re.findall(r"\d[\d,]*|FOCUSED|SNAPSHOT|disk full|KeyError: 'x'", reason):
        assert figure in danish, (figure, danish)
    with app.test_request_context("/"):
        assert state_reason(reason) == reason


def test_the_danish_words_of_a_few_reasons(app):
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        assert state_reason(reasons.joined(reasons.run_asked_for(), reasons.postponed("FOCUSED"))) == (
            "en kørsel er bestilt; udskudt: ingen registreret høstcontroller betjener kanalen FOCUSED")
        assert state_reason(reasons.generated(1, 2, T1, T2)) == (
            "kørsel 1: 2 job 2026-11-27 04:00:00 UTC; næste kørsel 2026-11-28 04:00:00 UTC")
        assert state_reason(reasons.finished(OUTLOOK, 1, T1)) == (
            "skemaet Once tillader 1 kørsel, og den har kørt; sidste kørsel 1 2026-11-27 04:00:00 UTC")
        assert state_reason(reasons.run_jobs_wait(3, reasons.sources_wait_for_jobs(1, 4, 2))) == (
            "jobbene i kørsel 3 venter: 1 af dens 4 job venter på, at de tidligere job, der høstede deres domæner, "
            "bliver færdige: 2 er ikke færdige endnu")
        assert [state_name(state) for state in ("waiting", "generated", "finished", "something new")] == [
            "venter", "genereret", "færdig", "something new"]
        # text the scheduler did not write stays as it was, known parts around it said in Danish
        assert state_reason("a reason not known") == "a reason not known"
        assert state_reason(f"{reasons.next_run(T1)}; a reason not known") == (
            "næste kørsel 2026-11-27 04:00:00 UTC; a reason not known")
        assert unknown_parts(f"{reasons.next_run(T1)}; a reason not known") == ["a reason not known"]


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
    assert listed["postponed_one"]["reason"].startswith("postponed: no registered harvest controller serves")


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_deduplication_index_refusal_is_said_in_the_pages_language(app, refusal):
    with app.test_request_context("/", headers={"Accept-Language": "da"}):
        danish = state_reason(reasons.run_jobs_wait(3, reasons.sources_refused(1, 2, refusal)))
    assert danish.startswith("jobbene i kørsel 3 venter: deduplikering afvist for 1 af dens 2 job: de tidligere "
                             "høstninger af kun ")
    english = re.findall(r"[a-z]+", re.sub(r"satisfactorythresholdpercentage", "", danish))
    assert not {"the", "of", "entries", "could", "more", "no", "stored", "unreadable"} & set(english), danish
