"""Seeds added to an event harvest say whether anything will harvest them: through the API (``will_run``,
``next_run``, ``reason``, ``warnings``) and on the harvest page (the message beside the Run now button),
for a harvest with a run to come, one that has run its course, an inactive one and one whose run is asked
for. On a real SQLite harvest database."""

from __future__ import annotations

from typing import Any

from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.runrequests import RunRequestRepository

TEMPLATE = "default_orderxml"


def event_harvest(api: Any, name: str, schedule: str, active: bool = True) -> int:
    """An event harvest with one seed; its edition."""
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": name, "schedule": schedule, "template": TEMPLATE, "active": active,
        "seeds": ["http://a.dk/first"]})
    assert created.status_code == 201, created.get_json()
    return created.get_json()["edition"]


def run_its_course(engine: Any, name: str) -> int:
    """The harvest's one run recorded as the scheduler records it, with no run after it; its edition."""
    with engine.begin() as conn:
        harvests = HarvestRepository(conn)
        harvests.record_run(harvests.get(name).harvest_id, 1, next_date=None)
        return harvests.get(name).edition


def add_seeds(api: Any, name: str, edition: int, seed: str = "http://b.dk/more") -> Any:
    return api("curator", "post", f"/api/v1/harvests/{name}/seeds",
               json={"edition": edition, "template": TEMPLATE, "seeds": [seed]})


def test_seeds_added_to_a_harvest_with_a_run_to_come_will_run(api):
    edition = event_harvest(api, "daily", "Once_a_day")
    added = add_seeds(api, "daily", edition)
    assert added.status_code == 201, added.get_json()
    answer = added.get_json()
    assert answer["will_run"] is True and answer["warnings"] == [] and answer["reason"] is None
    assert answer["next_run"] is not None and answer["next_run"] == answer["harvest"]["nextdate"]


def test_seeds_added_to_a_harvest_that_has_run_its_course_say_nothing_will_harvest_them(api, webui_engine):
    edition = event_harvest(api, "election", "Once")
    edition = run_its_course(webui_engine, "election")
    answer = add_seeds(api, "election", edition).get_json()
    assert answer["added"] == [{"domain": "b.dk", "configuration":
                                "election_default_orderxml_UnlimitedBytes_UnlimitedObjects"}]
    assert answer["will_run"] is False and answer["next_run"] is None and answer["run_requested"] is False
    assert answer["reason"] == "schedule Once allows 1 run, and all of them have run"
    assert answer["warnings"] == ["Seeds added to harvest election: nothing will harvest them until Run now or a "
                                  "new schedule: harvest election will not run again, since schedule Once allows "
                                  "1 run, and all of them have run."]

    # a run asked for harvests them
    with webui_engine.begin() as conn:
        RunRequestRepository(conn, "curator").request_run("election")
    asked = add_seeds(api, "election", answer["harvest"]["edition"], "http://c.dk/").get_json()
    assert asked["will_run"] is True and asked["run_requested"] is True and asked["next_run"] is None
    assert asked["warnings"] == []


def test_seeds_added_to_an_inactive_harvest_say_it_is_inactive(api):
    edition = event_harvest(api, "paused", "Once_a_day", active=False)
    answer = add_seeds(api, "paused", edition).get_json()
    assert answer["will_run"] is False and answer["next_run"] is None and answer["reason"] == "it is inactive"
    assert "nothing will harvest them until Run now or a new schedule" in answer["warnings"][0]


def test_the_api_description_names_the_fields_of_the_answer(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").get_json()["paths"]
    schema = paths["/harvests/{name}/seeds"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert {"added", "will_run", "next_run", "run_requested", "reason", "warnings", "harvest"} <= \
        set(schema["properties"])
    assert schema["properties"]["next_run"]["type"] == ["string", "null"]
    assert schema["properties"]["will_run"]["type"] == "boolean"


def test_the_page_says_nothing_will_harvest_the_seeds_beside_run_now(api, login, webui_engine):
    event_harvest(api, "election", "Once")
    edition = run_its_course(webui_engine, "election")
    curator = login("curator")
    added = curator.post("/definitions/harvests/election/seeds", data={
        "csrf_token": curator.csrf, "edition": edition, "template": TEMPLATE, "seeds": "http://b.dk/\nhttp://c.dk/",
        "max_objects": "-1", "max_bytes": "-1"})
    assert added.status_code == 302, added.get_data(as_text=True)
    page = curator.get(added.headers["Location"]).get_data(as_text=True)
    assert ('<p class="flash warning idle-seeds">Seeds added: 2 configurations; nothing will harvest them until '
            'Run now or a new schedule, since schedule Once allows 1 run, and all of them have run. '
            '<button type="submit" form="run-now">Run now</button></p>') in page
    assert 'id="run-now" action="/definitions/harvests/election/run"' in page

    danish = login("curator")
    danish.set_cookie("harvestsuite_language", "da")
    with webui_engine.connect() as conn:
        edition = HarvestRepository(conn).get("election").edition
    added = danish.post("/definitions/harvests/election/seeds", data={
        "csrf_token": danish.csrf, "edition": edition, "template": TEMPLATE, "seeds": "http://d.dk/"})
    page = danish.get(added.headers["Location"]).get_data(as_text=True)
    assert "idle-seeds" in page and "Seeds added" not in page


def test_the_page_says_only_what_was_added_when_a_run_is_to_come(api, login, webui_engine):
    edition = event_harvest(api, "daily", "Once_a_day")
    curator = login("curator")
    added = curator.post("/definitions/harvests/daily/seeds", data={
        "csrf_token": curator.csrf, "edition": edition, "template": TEMPLATE, "seeds": "http://b.dk/"})
    page = curator.get(added.headers["Location"]).get_data(as_text=True)
    assert "Seeds added: 1 configuration." in page and "idle-seeds" not in page
