"""A harvest that cannot run says so: on save (the API's ``warnings`` and the form's message), in "Why harvests
wait" and on its page; a harvest whose schedule has run its course is shown as finished with its last run,
distinct from active and from inactive; a new schedule with events to come makes it run again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.repositories.domains import DomainRepository
from harvestdef.schedules import Schedule, TimeUnit
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions

UTC_ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def schedule(**fields) -> Schedule:
    return Schedule(**{"name": "s", "timeunit": TimeUnit.DAILY, **fields})


@pytest.mark.parametrize(("fields", "runs", "expected"), [
    ({}, 0, None),
    ({}, 400, None),
    ({"maxrepeats": 3}, 2, None),
    ({"maxrepeats": 3}, 3, "schedule s allows 3 runs, and all of them have run"),
    ({"maxrepeats": 1}, 1, "schedule s allows 1 run, and all of them have run"),
    ({"startdate": datetime(2019, 1, 1, tzinfo=UTC), "enddate": datetime(2020, 1, 1, tzinfo=UTC)}, 0,
     "schedule s ended on 2020-01-01 00:00:00 UTC"),
    # a fixed time of day (03:00) whose next slot lies after the end, although the end is still to come
    ({"anytime": False, "onhour": 3, "onminute": 0, "enddate": NOW + timedelta(hours=2)}, 0,
     "schedule s has no event left before its end on 2026-11-25 14:00:00 UTC"),
    ({"enddate": NOW + timedelta(hours=2)}, 5, None),
])
def test_end_reason_names_the_end_or_the_repeats_used_up(fields, runs, expected):
    said = schedule(**fields).end_reason(runs, NOW, UTC_ZONE)
    assert (None if said is None else str(said)) == expected


@pytest.fixture
def ticker(webui_engine):
    return Ticker(webui_engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), Notifier())


def make_schedule(api, name, **fields):
    response = api("curator", "post", "/api/v1/schedules", json={"name": name, "timeunit": "DAILY", **fields})
    assert response.status_code == 201, response.get_json()


def state_of(engine, name):
    hd, st = s.harvestdefinitions, s.harvest_state
    with engine.connect() as conn:
        return conn.execute(select(st.c.state, st.c.reason).join(hd, hd.c.harvest_id == st.c.harvest_id)
                            .where(hd.c.name == name)).one_or_none()


def test_a_schedule_that_ended_is_warned_about_on_save_and_the_harvest_waits_saying_why(
        api, login, webui_engine, ticker):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("a.dk")
    make_schedule(api, "ended_2020", startdate="2019-06-01T00:00:00Z", enddate="2020-01-01T00:00:00Z")
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "too_late", "schedule": "ended_2020", "active": True,
        "configurations": [{"domain": "a.dk"}]})
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["warnings"] == ["Harvest too_late will not run: schedule ended_2020 ended on "
                                   "2020-01-01 00:00:00 UTC."]
    assert created["nextdate"] is None
    assert created["outlook"] == {"state": "cannot run", "reason": "schedule ended_2020 ended on "
                                  "2020-01-01 00:00:00 UTC", "last_run": 0, "last_run_at": None,
                                  "reason_phrase": {"code": "schedule_ended", "values": {
                                      "name": "ended_2020", "time": "2020-01-01 00:00:00 UTC"}}}

    report = ticker.tick()
    assert report.waiting["too_late"] == ("will never run: schedule ended_2020 ended on 2020-01-01 00:00:00 UTC; "
                                          "give it a schedule with events to come")
    assert not report.generated
    assert state_of(webui_engine, "too_late") == ("waiting", report.waiting["too_late"])

    curator = login("curator")
    waiting = curator.get("/status/waiting").get_data(as_text=True)
    assert "too_late" in waiting and "will never run: schedule ended_2020 ended on 2020-01-01" in waiting
    page = curator.get("/definitions/harvests/too_late").get_data(as_text=True)
    assert "Cannot run · 0 runs" in page
    assert "This harvest will never run: schedule ended_2020 ended on 2020-01-01 00:00:00 UTC." in page

    # The form warns too, when the same schedule is chosen for another harvest.
    response = curator.post("/definitions/harvests/new/selective", data={
        "csrf_token": curator.csrf, "name": "also_late", "schedule": "ended_2020", "configurations": "a.dk"},
        follow_redirects=True)
    text = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Harvest also_late will not run, even when activated: schedule ended_2020 ended on" in text
    assert 'class="flash warning"' in text


def test_a_harvest_whose_repeats_are_used_up_is_finished_and_runs_again_on_a_new_schedule(
        api, login, webui_engine, ticker):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("a.dk")
    make_schedule(api, "twice", maxrepeats=2)
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "two_runs", "schedule": "twice", "active": True,
        "configurations": [{"domain": "a.dk"}]})
    assert response.status_code == 201 and response.get_json()["warnings"] == []
    hd, partial = s.harvestdefinitions, s.partialharvests

    def run_now():
        with webui_engine.begin() as conn:
            harvest_id = conn.scalar(select(hd.c.harvest_id).where(hd.c.name == "two_runs"))
            conn.execute(update(partial).where(partial.c.harvest_id == harvest_id).values(
                nextdate=utcnow() - timedelta(seconds=1)))
        return ticker.tick()

    assert list(run_now().generated) == ["two_runs"]
    assert api("archivist", "get", "/api/v1/harvests/two_runs").get_json()["outlook"]["state"] == "active"
    assert list(run_now().generated) == ["two_runs"]
    with webui_engine.connect() as conn:
        assert conn.scalar(select(partial.c.nextdate)) is None

    report = ticker.tick()
    assert report.finished["two_runs"] == "schedule twice allows 2 runs, and all of them have run"
    assert "two_runs" not in report.waiting and not report.generated
    state, reason = state_of(webui_engine, "two_runs")
    assert state == "finished"
    assert reason.startswith("schedule twice allows 2 runs, and all of them have run; last run 2 at ")

    detail = api("archivist", "get", "/api/v1/harvests/two_runs").get_json()
    assert detail["active"] is True
    assert detail["outlook"]["state"] == "finished" and detail["outlook"]["last_run"] == 2
    assert detail["outlook"]["last_run_at"] is not None
    curator = login("curator")
    page = curator.get("/definitions/harvests/two_runs").get_data(as_text=True)
    assert "Finished · 2 runs" in page and "Finished: schedule twice allows 2 runs" in page
    assert ">Deactivate<" not in page
    listing = curator.get("/definitions/harvests").get_data(as_text=True)
    assert "<td class=\"nowrap\">Finished</td>" in listing
    assert "finished" in curator.get("/status/waiting").get_data(as_text=True)

    # A schedule with events to come gives it a next run, and it is active again.
    make_schedule(api, "every_day")
    edition = detail["edition"]
    response = api("curator", "patch", "/api/v1/harvests/two_runs", json={"edition": edition,
                                                                           "schedule": "every_day"})
    assert response.status_code == 200, response.get_json()
    changed = response.get_json()
    assert changed["warnings"] == [] and changed["nextdate"] is not None
    assert changed["outlook"]["state"] == "active"
    # Back to a schedule whose repeats are used up: saved, with the warning, and no next run.
    response = api("curator", "patch", "/api/v1/harvests/two_runs", json={"edition": changed["edition"],
                                                                           "schedule": "twice"})
    assert response.get_json()["warnings"] == [
        "Harvest two_runs will not run again: schedule twice allows 2 runs, and all of them have run."]
    assert response.get_json()["nextdate"] is None
