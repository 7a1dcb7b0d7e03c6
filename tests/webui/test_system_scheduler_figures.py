"""The System page's figures of the scheduler (webui/schedulerfigures.py): read from the scheduler endpoints
that harvestsuite.metrics.schedulerTargets names, here a scheduler's own metrics (scheduler/metrics.py)
served on a real port, and one target that does not answer, shown with the reason; in English and Danish.
Without targets the page says how to have them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import Engine

from harvestdef.metrics import MetricsEndpoint, open_endpoint
from harvestdef.settings import load_settings
from scheduler.metrics import SchedulerMetrics
from tests.metricscrape import free_port
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app
from webui.language import COOKIE


@pytest.fixture
def scheduler_endpoint() -> Iterator[MetricsEndpoint]:
    metrics = SchedulerMetrics()
    metrics.leading(True)
    for seconds in (0.25, 0.75):
        metrics.tick_completed(seconds, 1_780_000_000.0, {"daily": 0.2}, 3, 0,
                               {"timed_out": 0, "interrupted": 0, "resubmitted": 1}, {"ready": 2, "waiting": 1}, 1)
    metrics.tick_failed()
    metrics.dispatched.labels(channel="FOCUSED").inc(2)
    metrics.dispatched.labels(channel="SNAPSHOT").inc(5)
    metrics.claims.labels(outcome="granted").inc(6)
    metrics.claims.labels(outcome="refused").inc(1)
    metrics.queues_measured([("PROD.jobs.FOCUSED", 4), ("PROD.scheduler", 0)])
    metrics.messages.labels(queue="PROD.scheduler").inc(40)
    endpoint = open_endpoint("127.0.0.1", 0, metrics.registry)
    yield endpoint
    endpoint.close()


@pytest.fixture
def silent_target() -> str:
    return f"http://127.0.0.1:{free_port()}/metrics"  # nothing listens there


@pytest.fixture
def app(webui_engine: Engine, tmp_path: Path, scheduler_endpoint: MetricsEndpoint, silent_target: str) -> Flask:
    settings = load_settings(environ={}, overrides={
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'queue.db'}",
        "harvestsuite.metrics.schedulerTargets": [scheduler_endpoint.url, silent_target]})
    return create_app(settings, webui_engine, {"TESTING": True})


def test_the_system_page_shows_each_schedulers_figures(login, scheduler_endpoint, silent_target):
    page = login("archivist").get("/system/").get_data(as_text=True)
    assert f"Figures of the scheduler at {scheduler_endpoint.url}" in page
    assert "<td>leading</td>" in page
    assert "2 completed, 1 failed" in page
    assert "0.50 s" in page  # the average of its two ticks
    assert "FOCUSED: 2, SNAPSHOT: 5" in page
    assert "6 granted, 1 refused" in page
    assert "4 ready, 0 refused, 2 waiting" in page  # of its two ticks
    assert "Messages waiting in PROD.jobs.FOCUSED</th><td>4" in page
    assert "2026-05-28" in page  # the last tick, 1 780 000 000 s after the epoch
    assert f"Figures of the scheduler at {silent_target}" in page
    assert "Its figures cannot be read: URLError: [Errno 111] Connection refused." in page


def test_the_figures_speak_danish(login):
    client = login("archivist")
    client.set_cookie(COOKIE, "da")
    page = client.get("/system/").get_data(as_text=True)
    assert "Tal fra scheduleren på" in page
    assert "2 gennemført, 1 fejlet" in page
    assert "Tallene kan ikke læses" in page


def test_without_targets_the_page_says_how_to_have_figures(webui_engine, tmp_path):
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.queue.url": f"sqlite:///{tmp_path / 'queue.db'}"})
    app = create_app(settings, webui_engine, {"TESTING": True})
    client = app.test_client()
    assert client.post("/login", data={"name": "archivist", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    page = client.get("/system/").get_data(as_text=True)
    assert "Figures of the scheduler" not in page
    assert "harvestsuite.metrics.schedulerTargets</code> names its metrics endpoints" in page
