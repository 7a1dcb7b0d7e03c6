"""Fixtures for the running scheduler: a queue transport on the embedded SQLite file and on the real
RabbitMQ (each test with its own environment name, so its queues are its own), and services built on
them with test intervals."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harvestdef.queues import QueueNames, Transport, open_transport
from harvestdef.settings import Settings, load_settings
from scheduler.service import SchedulerService
from tests.servers import AMQP_URL, require_rabbitmq

TEST_SETTINGS = {
    "harvester.scheduler.jobgenerationperiod": 1,
    # Long enough that a renewal delayed by a loaded neighbour (another worker's deliberate long database lock,
    # say) does not cost the leadership mid-test; the tests of leadership handoff set their own lease.
    "harvestsuite.scheduler.leaderLeaseTime": 10,
    # the simulated controllers state no heartbeat interval: they are judged by this one, lost after 2 s
    "harvestsuite.harvester.heartbeatInterval": 1,
    "harvestsuite.scheduler.lostAfterHeartbeats": 2,
    "harvestsuite.scheduler.claimGraceTime": 5,
    "harvestsuite.queue.heartbeat": 5,
    "harvestsuite.queue.publishTimeout": 30,
    "harvestsuite.queue.reconnectMaxDelay": 1,
    "harvestsuite.queue.pollInterval": 20,
}


@pytest.fixture(params=["sqlite", "amqp"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "amqp":
        request.applymarker(pytest.mark.rabbitmq)
        require_rabbitmq()
        return AMQP_URL
    return f"sqlite:///{tmp_path / 'queue.db'}"


@pytest.fixture
def environment_name() -> str:
    return f"T{uuid.uuid4().hex[:10]}"


@pytest.fixture
def make_settings(database_url: str, queue_url: str, environment_name: str) -> Callable[..., Settings]:
    def make(**overrides: object) -> Settings:
        values = {**TEST_SETTINGS, "harvestsuite.database.url": database_url, "harvestsuite.queue.url": queue_url,
                  "common.environmentName": environment_name}
        values.update({key.replace("__", "."): value for key, value in overrides.items()})
        return load_settings(environ={}, overrides=values)
    return make


@pytest.fixture
def open_queue(make_settings: Callable[..., Settings]) -> Iterator[Callable[[], Transport]]:
    """Opens transports (one per simulated process); all are closed, and the test's queues deleted, at the end."""
    opened: list[Transport] = []

    def make() -> Transport:
        transport = open_transport(make_settings().queue)
        opened.append(transport)
        return transport

    yield make
    settings = make_settings()
    for transport in opened:
        transport.close()
    if settings.queue.url.startswith("amqp"):
        # the broker is shared and keeps durable queues for good: remove every queue this test can have made
        from tests.harvestdef.test_queue_amqp import delete_queues

        names = QueueNames(settings.queue.environmentName)
        # the scheduler counts every channel's queue after its ticks, which declares each
        delete_queues([names.scheduler, names.monitor, names.dead_letter, names.jobs("FOCUSED"),
                       names.jobs("SNAPSHOT"), names.jobs("BROWSER"),
                       *(names.controller(f"ctl-{n}") for n in [*range(10), "x"]),
                       *(names.control(f"ctl-{n}") for n in [*range(10), "x"])])


class RunningScheduler:
    """A SchedulerService running in a thread of the test, as `harvestsuite scheduler run` runs it."""

    def __init__(self, service: SchedulerService) -> None:
        self.service = service
        self.stop = threading.Event()
        self.leading = threading.Event()
        self.thread = threading.Thread(target=service.run, args=(self.stop, self.leading.set), daemon=True)

    def start(self) -> RunningScheduler:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the scheduler did not stop"


@pytest.fixture
def run_scheduler(make_settings, engine, open_queue) -> Iterator[Callable[..., RunningScheduler]]:
    running: list[RunningScheduler] = []

    def start(**overrides: object) -> RunningScheduler:
        settings = make_settings(**overrides)
        scheduler = RunningScheduler(SchedulerService.from_settings(settings, engine, open_queue())).start()
        running.append(scheduler)
        return scheduler

    yield start
    for scheduler in running:
        scheduler.close()
