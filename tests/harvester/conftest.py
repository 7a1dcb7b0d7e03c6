"""The whole harvesting path for tests: a harvest database, the real scheduler (in a thread of the test), the
harvest controller as a real process (``harvestsuite harvester run``) driving the bundled engine as its
child, the local test site (tests/engine/site.py) reached through a hosts file, an archive store in
tmp_path, and the queue on the real RabbitMQ (or the embedded SQLite queue).

Every interval is a test setting of a second or two."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames
from harvestdef.settings import Settings, load_settings
from scheduler.service import SchedulerService
from tests.engine.site import TestSite
from tests.scheduler.factories import add_config, make_selective, template_id
from tests.servers import AMQP_URL, require_rabbitmq

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED = ROOT.parent / "shared"
OUR_TEMPLATE = ROOT / "templates" / "default_orderxml.cxml"
NAS_WITHDEDUP = SHARED / "fixtures" / "heritrix3" / "netarchivesuite-default_orderxml_withdedup.cxml"
FINAL = (JobStatus.DONE, JobStatus.FAILED)


def fast_politeness(template: str) -> str:
    """The template with test-speed politeness and retries: the test site is on loopback."""
    replacements = {r"disposition\.minDelayMs=\d+": "disposition.minDelayMs=10",
                    r"disposition\.maxDelayMs=\d+": "disposition.maxDelayMs=50",
                    r"disposition\.delayFactor=[\d.]+": "disposition.delayFactor=0.1",
                    r"frontier\.retryDelaySeconds=\d+": "frontier.retryDelaySeconds=1",
                    r"frontier\.maxRetries=\d+": "frontier.maxRetries=1",
                    r"crawlController\.maxToeThreads=\d+": "crawlController.maxToeThreads=4",
                    r"fetchHttp\.soTimeoutMs=\d+": "fetchHttp.soTimeoutMs=3000",
                    r"fetchHttp\.timeoutSeconds=\d+": "fetchHttp.timeoutSeconds=5"}
    for pattern, value in replacements.items():
        template = re.sub(pattern, value, template)
    return template


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(str(value))


class ControllerProcess:
    """``harvestsuite harvester run`` as a process of its own, with its output in files."""

    def __init__(self, settings_file: Path, log_dir: Path, name: str, environ: dict[str, str]) -> None:
        self.log = log_dir / f"{name}.log"
        self.expected_exit = False
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harvestdef", "--config", str(settings_file), "-v", "harvester", "run"],
                cwd=log_dir, stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **environ})

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for_log(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.text())
            if match:
                return match
            if self.process.poll() is not None:
                raise AssertionError(f"the controller exited ({self.process.returncode}) before {pattern!r}:\n"
                                     f"{self.text()[-4000:]}")
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in the controller's log within {timeout} s:\n{self.text()[-4000:]}")

    def stop(self, timeout: float = 60) -> int:
        self.expected_exit = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        self.expected_exit = True
        self.process.kill()
        self.process.wait()


class Harvesting:
    """One test's system. ``settings`` holds every key of the TOML file the processes read."""

    def __init__(self, tmp_path: Path, site: TestSite, queue_url: str, template: str,
                 database_url: str | None = None) -> None:
        self.tmp = tmp_path
        self.site = site
        self.environment = f"T{uuid.uuid4().hex[:10]}"
        self.archive = tmp_path / "archive"
        self.archive.mkdir(exist_ok=True)  # the store as an operator mounts it: uploads never make its root
        self.server_dir = tmp_path / "server"
        hosts_file = tmp_path / "hosts"
        site.write_hosts_file(hosts_file)
        self.values: dict[str, object] = {
            "harvestsuite.database.url": database_url or f"sqlite:///{tmp_path / 'harvest.db'}",
            "harvestsuite.queue.url": queue_url,
            "common.environmentName": self.environment,
            "harvestsuite.archive.root": str(self.archive),
            "harvester.harvesting.serverdir": str(self.server_dir),
            "harvester.harvesting.channel": ["FOCUSED"],
            "harvester.harvesting.minSpaceLeft": 1_000_000,
            "harvester.harvesting.sendReadyDelay": 1,
            "harvester.harvesting.heritrix.crawlLoopWaitTime": 1,
            "harvester.harvesting.heritrix.inactivityTimeout": 30,
            "harvester.harvesting.heritrix.noresponseTimeout": 30,
            "harvester.harvesting.heritrix.adminPassword": "test-" + uuid.uuid4().hex[:8],
            "harvestsuite.harvester.heartbeatInterval": 1,
            "harvestsuite.harvester.uploadRetryDelay": 1,
            "harvestsuite.crawler.hostsFile": str(hosts_file),
            "harvester.harvesting.heritrix.guiPort": 0,
            "harvester.scheduler.jobgenerationperiod": 1,
            "harvestsuite.scheduler.leaderLeaseTime": 2,
            "harvestsuite.scheduler.lostAfterHeartbeats": 5,
            "harvestsuite.scheduler.claimGraceTime": 5,
            "harvestsuite.queue.heartbeat": 5,
            "harvestsuite.queue.reconnectMaxDelay": 1,
            "harvestsuite.queue.pollInterval": 20,
        }
        self.template = template
        self.engine: Engine = open_engine(str(self.values["harvestsuite.database.url"]))
        init_database(self.engine)
        self.controllers: list[ControllerProcess] = []
        self._scheduler_stop = threading.Event()
        self._scheduler_thread: threading.Thread | None = None
        self._transports: list = []

    # ------------------------------------------------------------------ settings
    def settings_file(self, **overrides: object) -> Path:
        values = {**self.values, **{key.replace("__", "."): value for key, value in overrides.items()}}
        path = self.tmp / f"settings-{uuid.uuid4().hex[:6]}.toml"
        path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in values.items()),
                        encoding="utf-8")
        return path

    def settings(self, **overrides: object) -> Settings:
        return load_settings(self.settings_file(**overrides), environ={})

    # ------------------------------------------------------------------ definitions
    def seed(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.site.port}{path}"

    def selective_harvest(self, name: str, domains: dict[str, list[str]], harvest_id: int = 100,
                          maxobjects: int = -1) -> int:
        """A selective harvest of ``domains`` (domain -> seeds), ready to run now."""
        with self.engine.begin() as conn:
            template_id(conn, "test_template", self.template)
            config_ids = []
            for domain, seeds in domains.items():
                domain_id = conn.execute(insert(s.domains).values(name=domain, edition=1)).inserted_primary_key[0]
                config_id = add_config(conn, domain_id, "defaultconfig", template="test_template",
                                       seeds="\n".join(seeds), maxobjects=maxobjects)
                conn.execute(update(s.domains).where(s.domains.c.domain_id == domain_id)
                             .values(defaultconfig=config_id))
                config_ids.append(config_id)
            make_selective(conn, harvest_id, name, config_ids, nextdate=utcnow() - timedelta(seconds=5))
        return harvest_id

    def run_again(self, harvest_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(s.partialharvests).where(s.partialharvests.c.harvest_id == harvest_id)
                         .values(nextdate=utcnow() - timedelta(seconds=1)))

    # ------------------------------------------------------------------ processes
    def start_scheduler(self, **overrides: object) -> None:
        from harvestdef.queues import open_transport
        settings = self.settings(**overrides)
        transport = open_transport(settings.queue)
        self._transports.append(transport)
        service = SchedulerService.from_settings(settings, self.engine, transport)
        self._scheduler_thread = threading.Thread(target=service.run, args=(self._scheduler_stop, lambda: None),
                                                  daemon=True)
        self._scheduler_thread.start()

    def start_controller(self, name: str = "controller", environ: dict[str, str] | None = None,
                         **overrides: object) -> ControllerProcess:
        controller = ControllerProcess(self.settings_file(**overrides), self.tmp, name, environ or {})
        self.controllers.append(controller)
        return controller

    # ------------------------------------------------------------------ looking
    def jobs(self, harvest_id: int) -> list:
        with self.engine.connect() as conn:
            return conn.execute(select(s.jobs.c.job_id, s.jobs.c.status, s.jobs.c.harvest_num, s.jobs.c.harvest_errors,
                                       s.jobs.c.upload_errors)
                                .where(s.jobs.c.harvest_id == harvest_id).order_by(s.jobs.c.job_id)).all()

    def wait_for_jobs(self, harvest_id: int, statuses: tuple[JobStatus, ...] = FINAL, timeout: float = 120,
                      harvest_num: int | None = None, what: Callable[[], str] | None = None) -> list:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = [job for job in self.jobs(harvest_id) if harvest_num is None or job.harvest_num == harvest_num]
            if jobs and all(JobStatus(job.status) in statuses for job in jobs):
                return jobs
            exited = [c for c in self.controllers if c.process.poll() is not None and not c.expected_exit]
            if exited:
                raise AssertionError(f"controller {exited[0].log.name} exited with {exited[0].process.returncode}:\n"
                                     f"{exited[0].text()[-4000:]}")
            time.sleep(0.3)
        logs = "\n".join(f"--- {c.log.name}\n{c.text()[-3000:]}" for c in self.controllers)
        raise AssertionError(f"jobs of harvest {harvest_id} not in {statuses} within {timeout} s: "
                             f"{self.jobs(harvest_id)}\n{what() if what else ''}\n{logs}")

    def history(self, job_id: int) -> list:
        with self.engine.connect() as conn:
            return conn.execute(select(s.historyinfo, s.domains.c.name)
                                .join(s.configurations, s.configurations.c.config_id == s.historyinfo.c.config_id)
                                .join(s.domains, s.domains.c.domain_id == s.configurations.c.domain_id)
                                .where(s.historyinfo.c.job_id == job_id).order_by(s.domains.c.name)).all()

    def close(self) -> None:
        for controller in self.controllers:
            controller.stop()
        self._scheduler_stop.set()
        if self._scheduler_thread is not None:
            self._scheduler_thread.join(timeout=30)
        for transport in self._transports:
            transport.close()
        if str(self.values["harvestsuite.queue.url"]).startswith("amqp"):
            from tests.harvestdef.test_queue_amqp import delete_queues
            names = QueueNames(self.environment)
            delete_queues([names.scheduler, names.monitor, names.dead_letter, names.jobs("FOCUSED"),
                           names.jobs("SNAPSHOT"), names.jobs("BROWSER"), *self.controller_queues()])
        self.engine.dispose()

    def controller_queues(self) -> list[str]:
        names = QueueNames(self.environment)
        ids = []
        for path in self.tmp.glob("**/controller-id"):
            ids.append(names.controller(path.read_text().strip()))
            ids.append(names.control(path.read_text().strip()))
        return ids


@pytest.fixture(params=["amqp"])
def harvest_queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "amqp":
        request.applymarker(pytest.mark.rabbitmq)
        require_rabbitmq()
        return AMQP_URL
    return f"sqlite:///{tmp_path / 'queue.db'}"


@pytest.fixture
def harvest_site() -> Iterator[TestSite]:
    with TestSite(stall_seconds=60.0) as site:
        yield site


@pytest.fixture
def harvesting(tmp_path: Path, harvest_site: TestSite, harvest_queue_url: str) -> Iterator[Callable[..., Harvesting]]:
    made: list[Harvesting] = []

    def make(template: str | None = None) -> Harvesting:
        text = template if template is not None else fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
        harvesting = Harvesting(tmp_path, harvest_site, harvest_queue_url, text)
        made.append(harvesting)
        return harvesting

    yield make
    for harvesting in made:
        harvesting.close()
