"""``add_uris`` on a running job through the API: a URI on an address harvesting does not connect to is a
400 naming the URI, and nothing is stored; the operator's harvestsuite.network.allowDestinations lets it
through. The job is STARTED through the scheduler's real intake, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine

from harvestdef.messages import CrawlStatus
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import QueueSettings, load_settings
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.notify import Notifier
from tests.scheduler.test_intake import NAMES, claim, job, one_job, ready, register
from tests.webui.conftest import PASSWORD, ROLES
from tests.webui.test_live_changes_api import CHANGES, stored
from webui import create_app

CONTROLLER = "ctl-1"


@pytest.fixture
def job_id(engine: Engine, tmp_path: Path) -> Iterator[int]:
    """A STARTED job of the domain 127.0.0.1 (an IP address is its own domain)."""
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    try:
        handle = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                                 StatusIntake(Notifier(), history_sample_rate=1)).carry_out_one
        made, _ = one_job(engine, domains=(("127.0.0.1", 1000, -1),))
        register(handle, CONTROLLER)
        assert ready(handle, CONTROLLER) == made
        attempt = job(engine, made).attempt_id
        assert claim(handle, made, attempt, CONTROLLER).granted
        assert handle(CrawlStatus(job_id=made, attempt_id=attempt, controller_id=CONTROLLER,
                                  status=JobStatus.STARTED))
        yield made
    finally:
        transport.close()


def api_of(engine: Engine, tmp_path: Path, allow: str) -> Callable[..., Any]:
    with engine.begin() as conn:
        for role in ROLES:
            UserRepository(conn).create(role, role, password=PASSWORD)
        tokens = {role: UserRepository(conn).create_token(role) for role in ROLES}
    overrides: dict[str, object] = {"harvestsuite.webui.secretKey": "test-secret",
                                    "harvestsuite.archive.root": str(tmp_path / "archive")}
    if allow:
        overrides["harvestsuite.network.allowDestinations"] = allow
    app: Flask = create_app(load_settings(environ={}, overrides=overrides), engine, {"TESTING": True})
    client = app.test_client()

    def call(role: str, method: str, path: str, **kwargs: Any) -> Any:
        return getattr(client, method)(path, headers={"Authorization": f"Bearer {tokens[role]}"}, **kwargs)
    return call


def test_an_added_uri_on_loopback_is_a_400_naming_it(engine: Engine, tmp_path: Path, job_id: int) -> None:
    api = api_of(engine, tmp_path, "")
    response = api("operator", "post", CHANGES.format(job_id),
                   json={"kind": "add_uris", "uris": ["http://127.0.0.1/new", "http://127.0.0.1:5432/"]})
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert error["field"] == "uris[0]"
    assert error["message"].startswith("uris[0]: 'http://127.0.0.1/new': 127.0.0.1 is a loopback address"), error
    assert "harvestsuite.network.allowDestinations" in error["message"]
    assert stored(engine, job_id) == []


def test_an_added_uri_the_setting_allows_is_stored(engine: Engine, tmp_path: Path, job_id: int) -> None:
    api = api_of(engine, tmp_path, "127.0.0.0/8")
    response = api("operator", "post", CHANGES.format(job_id),
                   json={"kind": "add_uris", "uris": ["http://127.0.0.1:8080/new"]})
    assert response.status_code == 202, response.get_json()
    assert [change.payload for change in stored(engine, job_id)] == [{"uris": ["http://127.0.0.1:8080/new"]}]
