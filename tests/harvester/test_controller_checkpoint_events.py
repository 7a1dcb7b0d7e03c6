"""A checkpoint asked for through the crawler's REST API while the crawl runs, then SIGTERM of the harvest
controller mid-crawl, a restart, the resume: real processes (see conftest.py). The crawl is resumed
without fetching any URI twice (the test site's own request log), and the job page and the job's API
answer list both checkpoints and the resume, when and on which controller."""

from __future__ import annotations

import json
import re
from collections import Counter

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from harvester.engine.rest.tls import CERT_FILE
from harvester.engineprocess import ENGINE_DIR
from harvester.heritrix import HeritrixClient
from harvester.jobdir import RESUME
from tests.harvester.conftest import OUR_TEMPLATE, fast_politeness
from tests.harvester.test_controller_failures import crawled_lines, job_directory, wait_for
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app


def paced_template() -> str:
    """0.25 s between requests to a host: the crawl is still under way when the controller is stopped."""
    text = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    text = re.sub(r"disposition\.minDelayMs=\d+", "disposition.minDelayMs=250", text)
    return re.sub(r"disposition\.maxDelayMs=\d+", "disposition.maxDelayMs=250", text)


def test_sigterm_checkpoints_the_crawl_and_the_job_page_lists_checkpoint_and_resume(harvesting, tmp_path):
    h = harvesting(paced_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    first = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")

    def console():
        with h.engine.connect() as conn:
            return conn.scalar(select(s.runningjobsmonitor.c.hosturl))

    url = wait_for(console, 10, "the crawl's console URL in a progress message")
    engine_url, _, job_name = url.partition("/engine/job/")
    operator = HeritrixClient(engine_url, "admin", str(h.values["harvester.harvesting.heritrix.adminPassword"]),
                              ca_file=h.server_dir / ENGINE_DIR / CERT_FILE)
    asked = operator.checkpoint(job_name).checkpoint_files[-1]  # while it runs: the crawl goes on
    wait_for(lambda: crawled_lines(h.server_dir) >= 10, 60, "ten crawl.log lines")
    assert first.stop() == 0
    directory = job_directory(h.server_dir)
    checkpoint = json.loads((directory / RESUME).read_text())["checkpoint"]
    assert checkpoint != asked
    second = h.start_controller("second")
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job
    assert f"resumes from checkpoint {checkpoint}" in second.text()
    twice = {request: count for request, count in Counter(h.site.requests).items() if count > 1}
    assert twice == {}, f"fetched twice according to the site's request log: {twice}"

    controller = re.search(r"harvest controller (\S+) on ", second.text()).group(1)
    with h.engine.begin() as conn:
        UserRepository(conn).create("archivist", "archivist", password=PASSWORD)
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(h.archive)})
    app = create_app(settings, h.engine, {"TESTING": True})
    client = app.test_client()
    answer = client.post("/login", data={"name": "archivist", "password": PASSWORD, "csrf_token": csrf_of(client)})
    assert answer.status_code == 302

    def all_events():
        return client.get(f"/api/v1/jobs/{job.job_id}").json["events"]

    def events():
        # the scheduler's own events (a controller lost and back: under load the restart can outlast
        # lostAfterHeartbeats) are about the controller, not the crawl's checkpoints, and may come between
        return [event for event in all_events() if event["kind"] in ("checkpoint", "resume")]

    # the JobEvents went out before the final status, on the same queue; the intake may take them in any order
    try:
        wait_for(lambda: len(events()) == 3, 10, "both checkpoints and the resume in the job's API answer")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the job's events: {all_events()}") from None
    by_operator, checkpointed, resumed = events()
    assert len(all_events()) - 3 in (0, 2), all_events()  # a lost controller is back once, never lost twice
    assert (by_operator["kind"], by_operator["checkpoint"], by_operator["controller"]) == (
        "checkpoint", asked, controller)
    assert (checkpointed["kind"], checkpointed["checkpoint"], checkpointed["controller"]) == (
        "checkpoint", checkpoint, controller)
    assert (resumed["kind"], resumed["checkpoint"], resumed["controller"]) == ("resume", checkpoint, controller)
    assert checkpointed["happened_at"] <= resumed["happened_at"]
    page = re.sub(r"\s+", " ", client.get(f"/status/jobs/{job.job_id}").get_data(as_text=True))
    assert "<h2>Events</h2>" in page
    section = page[page.index("<h2>Events</h2>"):page.index("Domains and configurations")]
    assert re.search(rf"checkpointed</td> ?<td>{asked}</td> ?<td>{controller}</td>", section), section
    assert re.search(rf"checkpointed</td> ?<td>{checkpoint}</td> ?<td>{controller}</td>", section), section
    assert re.search(rf"resumed</td> ?<td>{checkpoint}</td> ?<td>{controller}</td>", section), section
