"""Nothing harvested, from crawl to page: a real crawl of the bundled engine (a dead name, a seed robots.txt
forbids, a good site) makes the domain report, which travels as a CrawlStatus through the codec into status
intake, on SQLite and on PostgreSQL; the job page, the job and history API, the harvest's statistics and the
domain's history then show the two that got nothing with their reasons, and not the third."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, select, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.demo.narrator import Narrator
from harvestdef.messages import (
    ClaimRequest,
    CrawlStatus,
    DomainReport,
    HarvesterReady,
    RegistrationRequest,
    decode,
    encode,
)
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.queues import QueueNames, open_transport
from harvestdef.repositories.history import rebuild_summaries
from harvestdef.repositories.jobs import JobRepository
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import QueueSettings, load_settings
from harvester.postprocess.domainreport import build_domain_report
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier
from tests.engine.site import TestSite
from tests.harvester.test_postprocess_findings import crawl_with_findings
from tests.scheduler.factories import make_domain, make_selective
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app

NAMES = QueueNames("FINDINGS")
HARVEST = "daily"
CONTROLLER = "ctl-1"
DEAD_REASON = "DNS lookup failed (-6) for http://www.dead.invalid/"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[DomainReport, dict[str, str]]:
    """The domain report of one real crawl (shared by the tests of this module) and its seeds by domain."""
    with TestSite(hosts=("www.good.dk", "www.forbidden.dk", "www.gone.dk"), pages=2) as site:
        logs, seeds = crawl_with_findings(tmp_path_factory.mktemp("crawl"), site)
    job = {domain: "defaultconfig" for domain in ("good.dk", "forbidden.dk", "dead.invalid")}
    report = build_domain_report(logs / "crawl.log", logs / "progress-statistics.log", job).report
    return report, seeds


@pytest.fixture
def transport(tmp_path: Path) -> Iterator:
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="FINDINGS"))
    yield transport
    transport.close()


def started_job(engine: Engine, transport, seeds: dict[str, str]) -> tuple[int, str, Callable[..., Any]]:
    """A selective harvest of the three domains, its job dispatched, claimed and STARTED as a controller would."""
    with engine.begin() as conn:
        configs = [make_domain(conn, domain, seeds=seeds[domain])[1]
                   for domain in ("good.dk", "forbidden.dk", "dead.invalid")]
        make_selective(conn, 1, HARVEST, configs, nextdate=utcnow() - timedelta(minutes=1))
    (job_id,) = generate_jobs(engine, 1, GenerationOptions()).job_ids
    handle = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                             StatusIntake(Notifier())).carry_out_one
    handle(RegistrationRequest(controller_id=CONTROLLER, host="h", channels=["FOCUSED"],
                               reply_queue=NAMES.controller(CONTROLLER)))
    assert handle(HarvesterReady(controller_id=CONTROLLER, host="h", channels=["FOCUSED"]), utcnow()) == job_id
    with engine.connect() as conn:
        attempt = JobRepository(conn).get(job_id).attempt_id
    assert handle(ClaimRequest(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER,
                               reply_queue=NAMES.controller(CONTROLLER))).granted
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.STARTED))
    return job_id, attempt, handle


def done(job_id: int, attempt: str, report: DomainReport) -> bytes:
    return encode(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.DONE,
                              domain_report=report))


@pytest.fixture
def web(engine: Engine, tmp_path: Path) -> tuple[Flask, str]:
    """The web UI on the test's database, and an archivist's API token."""
    with engine.begin() as conn:
        UserRepository(conn).create("archivist", "archivist", password=PASSWORD)
        token = UserRepository(conn).create_token("archivist")
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive")})
    return create_app(settings, engine, {"TESTING": True}), token


def logged_in(app: Flask) -> FlaskClient:
    client = app.test_client()
    response = client.post("/login", data={"name": "archivist", "password": PASSWORD,
                                           "csrf_token": csrf_of(client)})
    assert response.status_code == 302
    return client


def text_of(client: FlaskClient, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, path
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)))


def test_a_dead_seed_and_a_forbidden_seed_are_flagged_with_their_reasons_from_crawl_to_page(
        engine, transport, crawled, web):
    report, seeds = crawled
    forbidden_reason = f"robots.txt precluded (-9998) for {seeds['forbidden.dk']}"
    job_id, attempt, handle = started_job(engine, transport, seeds)
    assert handle(decode(done(job_id, attempt, report), CrawlStatus))

    with engine.connect() as conn:
        findings = {row.name: row for row in conn.execute(
            select(s.domains.c.name, s.harvest_findings, s.historyinfo.c.stopreason)
            .join(s.historyinfo, s.historyinfo.c.historyinfo_id == s.harvest_findings.c.historyinfo_id)
            .join(s.configurations, s.configurations.c.config_id == s.harvest_findings.c.config_id)
            .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id))}
        run = conn.execute(select(s.harvest_run_summary)).mappings().one()
    assert sorted(findings) == ["dead.invalid", "forbidden.dk"]
    assert (findings["dead.invalid"].reason, findings["dead.invalid"].fetch_status) == (DEAD_REASON, -6)
    assert (findings["forbidden.dk"].reason, findings["forbidden.dk"].fetch_status) == (forbidden_reason, -9998)
    assert {row.stopreason for row in findings.values()} == {int(StopReason.DOWNLOAD_COMPLETE)}
    assert findings["dead.invalid"].job_id == job_id and findings["dead.invalid"].harvest_num == 1
    assert (run["configurations"], run["nothing_harvested"]) == (3, 2)

    app, token = web
    api = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    configurations = {c["domain"]: c["result"] for c in
                      api.get(f"/api/v1/jobs/{job_id}", headers=headers).get_json()["configurations"]}
    assert configurations["dead.invalid"]["nothing_harvested"] is True
    assert configurations["dead.invalid"]["nothing_harvested_reason"] == DEAD_REASON
    assert configurations["dead.invalid"]["nothing_harvested_fetch_status"] == -6
    assert configurations["forbidden.dk"]["nothing_harvested_reason"] == forbidden_reason
    assert configurations["good.dk"]["nothing_harvested"] is False
    assert configurations["good.dk"]["nothing_harvested_reason"] is None

    statistics = api.get(f"/api/v1/harvests/{HARVEST}/statistics", headers=headers).get_json()
    assert statistics["items"][0]["nothing_harvested"] == 2
    (exported,) = csv.DictReader(io.StringIO(api.get(f"/api/v1/export/harvests/{HARVEST}/statistics.csv",
                                                     headers=headers).get_data(as_text=True)))
    assert (exported["configurations"], exported["nothing_harvested"]) == ("3", "2")
    listed = api.get(f"/api/v1/harvests/{HARVEST}/runs/1/nothing-harvested?limit=1", headers=headers).get_json()
    assert len(listed["items"]) == 1 and listed["next"]
    following = api.get(f"/api/v1/harvests/{HARVEST}/runs/1/nothing-harvested?limit=1&after={listed['next']}",
                        headers=headers).get_json()
    assert {(item["domain"], item["reason"]) for item in listed["items"] + following["items"]} == {
        ("dead.invalid", DEAD_REASON), ("forbidden.dk", forbidden_reason)}
    assert following["next"] is None
    assert api.get(f"/api/v1/harvests/{HARVEST}/runs/2/nothing-harvested", headers=headers).get_json()["items"] == []
    assert api.get("/api/v1/harvests/nosuch/runs/1/nothing-harvested", headers=headers).status_code == 404

    (dead_history,) = api.get("/api/v1/domains/dead.invalid/history", headers=headers).get_json()["items"]
    assert (dead_history["nothing_harvested"], dead_history["nothing_harvested_reason"]) == (True, DEAD_REASON)
    assert dead_history["stopreason"] == "DOWNLOAD_COMPLETE"
    (good_history,) = api.get("/api/v1/domains/good.dk/history", headers=headers).get_json()["items"]
    assert good_history["nothing_harvested"] is False

    described = api.get("/api/v1/openapi.json", headers=headers).get_json()["paths"]
    assert "nothing-harvested" in described["/jobs/{job_id}"]["get"]["summary"]
    assert "nothing-harvested" in described["/domains/{name}/history"]["get"]["summary"]
    assert "got nothing" in described["/harvests/{name}/runs/{harvest_num}/nothing-harvested"]["get"]["summary"]

    client = logged_in(app)
    page = text_of(client, f"/status/jobs/{job_id}")
    warning = re.search(r"Nothing harvested for 2 of 3 configurations: (.*?) Domain Configuration", page)
    assert warning, page
    assert f"dead.invalid (defaultconfig): {DEAD_REASON}" in warning.group(1)
    assert f"forbidden.dk (defaultconfig): {forbidden_reason}" in warning.group(1)
    assert "good.dk" not in warning.group(1)
    statistics_page = client.get(f"/history/harvests/{HARVEST}").get_data(as_text=True)
    assert f'href="/history/harvests/{HARVEST}/runs/1/nothing-harvested">2</a>' in statistics_page
    assert DEAD_REASON in text_of(client, f"/history/harvests/{HARVEST}/runs/1/nothing-harvested")
    history_page = text_of(client, "/history/domains/dead.invalid")
    assert f"nothing harvested {DEAD_REASON}" in history_page
    assert "nothing harvested" not in text_of(client, "/history/domains/good.dk")


def test_a_report_of_schema_1_0_is_accepted_and_a_configuration_without_objects_is_flagged_without_a_reason(
        engine, transport, crawled):
    report, seeds = crawled
    job_id, attempt, handle = started_job(engine, transport, seeds)
    document = json.loads(done(job_id, attempt, report))
    document["version"] = "1.0"
    for stats in document["body"]["domain_report"]["domains"]:
        del stats["nothing_harvested"]
    assert handle(decode(json.dumps(document).encode(), CrawlStatus))
    with engine.connect() as conn:
        findings = conn.execute(select(s.domains.c.name, s.harvest_findings.c.reason)
                                .join(s.configurations, s.configurations.c.config_id == s.harvest_findings.c.config_id)
                                .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id)).all()
    # a 1.0 controller cannot tell that robots.txt kept the crawler out of forbidden.dk, which has objects
    assert [tuple(row) for row in findings] == [("dead.invalid", "no object harvested")]


def test_rebuilt_summaries_count_what_got_nothing_as_intake_did(engine, transport, crawled):
    report, seeds = crawled
    job_id, attempt, handle = started_job(engine, transport, seeds)
    assert handle(decode(done(job_id, attempt, report), CrawlStatus))
    with engine.begin() as conn:
        conn.execute(update(s.harvest_run_summary).values(nothing_harvested=0))
        rebuild_summaries(conn)
        assert conn.scalar(select(s.harvest_run_summary.c.nothing_harvested)) == 2


def test_the_demo_narrators_done_line_names_what_got_nothing_and_why(engine, transport, crawled, tmp_path, caplog):
    report, seeds = crawled
    job_id, attempt, handle = started_job(engine, transport, seeds)
    assert handle(decode(done(job_id, attempt, report), CrawlStatus))
    caplog.set_level(logging.INFO, logger="harvestsuite.demo")
    Narrator(engine, "http://127.0.0.1:8080", tmp_path).look()
    (line,) = [record.getMessage() for record in caplog.records if " DONE: " in record.getMessage()]
    assert line.endswith(f"; 2 configurations got nothing: dead.invalid ({DEAD_REASON}), "
                         f"forbidden.dk (robots.txt precluded (-9998) for {seeds['forbidden.dk']})"), line
