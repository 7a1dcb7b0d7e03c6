"""The BROWSER channel is there in a new database and a selective harvest is put on it from the form and
through the API; its jobs are generated on that channel (the browser crawler's controllers serve it)."""

from __future__ import annotations

import re

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.repositories.domains import DomainRepository
from scheduler.jobgen.generate import GenerationOptions, generate_jobs


def test_a_selective_harvest_goes_on_the_browser_channel_through_the_api(api, webui_engine):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("skriptet.dk")
    response = api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "scripted", "schedule": "Once_a_day", "active": True, "channel": "BROWSER",
        "configurations": [{"domain": "skriptet.dk", "configuration": "defaultconfig"}]})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["channel"] == "BROWSER"
    result = generate_jobs(webui_engine, "scripted", GenerationOptions())
    with webui_engine.connect() as conn:
        channels = set(conn.scalars(select(s.jobs.c.channel).where(s.jobs.c.job_id.in_(result.job_ids))))
    assert result.job_ids and channels == {"BROWSER"}


def test_the_form_offers_the_browser_channel_for_a_selective_harvest_and_puts_it_there(login, webui_engine):
    with webui_engine.begin() as conn:
        DomainRepository(conn).create("skriptet.dk")
    curator = login("curator")
    form = curator.get("/definitions/harvests/new/selective").get_data(as_text=True)
    assert re.search(r"<option[^>]*>BROWSER</option>", form)
    response = curator.post("/definitions/harvests/new/selective", data={
        "csrf_token": curator.csrf, "name": "scripted", "schedule": "Once_a_day", "configurations": "skriptet.dk",
        "channel": "BROWSER"}, follow_redirects=True)
    assert response.status_code == 200
    assert "channel BROWSER" in curator.get("/definitions/harvests/scripted").get_data(as_text=True)
    # a snapshot harvest's form offers only snapshot channels
    assert "BROWSER" not in curator.get("/definitions/harvests/new/snapshot").get_data(as_text=True)
