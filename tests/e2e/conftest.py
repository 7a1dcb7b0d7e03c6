"""A whole installation as separate processes, started from the example files of deploy/: the scheduler, two
harvest controllers on two channels (each with its own serverDir and bundled crawl engine) and the web UI,
on the real PostgreSQL (a database of the test session, initialised with ``harvestsuite db init``) and the
real RabbitMQ (queues named after a random ``common.environmentName``, deleted at the end).

Each process reads its role's file from deploy/, copied into the test's directory, and the test changes
only what a site's environment file or command line would: URLs, paths and names through ``HARVESTSUITE__``
environment variables (as the systemd units' EnvironmentFile= lines do), and test-sized intervals through
``--set``. Harvests are defined through the JSON API only, as a curator's script would.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harvestdef.queues import QueueNames
from tests.engine.site import TestSite
from tests.harvestdef.test_queue_amqp import delete_queues
from tests.harvester.conftest import ControllerProcess
from tests.servers import AMQP_URL, require_rabbitmq

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
# kulturarv.dk has two hosts (one domain, two hosts in its crawl); www.lille.dk is seeded on a page that
# is gone, so its crawl is tiny and never reaches a snapshot's object limit.
SITE_HOSTS = ("www.kulturarv.dk", "images.kulturarv.dk", "www.bibliotek.no", "www.lille.dk")
HARVESTER_CHANNELS = {"focused": "FOCUSED", "snapshot": "SNAPSHOT"}
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0

_T = TypeVar("_T")

# Test-sized intervals: at most 2 s for anything the flow waits on. The AMQP heartbeat is
# not waited on: it only detects a dead peer, and at 1 or 2 s a busy 2-core machine would drop live ones.
SCHEDULER_SETS: dict[str, object] = {
    "harvester.scheduler.jobgenerationperiod": 1,
    "harvestsuite.scheduler.lostAfterHeartbeats": 10,
    "harvestsuite.scheduler.claimGraceTime": 10,
    # one intake process instead of the example's two: the 2-core test machine runs every role at once
    "harvestsuite.scheduler.intakeProcesses": 1,
    "harvestsuite.queue.heartbeat": 5,
    "harvestsuite.queue.reconnectMaxDelay": 1,
}
HARVESTER_SETS: dict[str, object] = {
    "harvester.harvesting.minSpaceLeft": 1_000_000,
    "harvester.harvesting.sendReadyDelay": 1,
    "harvester.harvesting.heritrix.crawlLoopWaitTime": 1,
    "harvester.harvesting.heritrix.inactivityTimeout": 30,
    "harvester.harvesting.heritrix.noresponseTimeout": 30,
    "harvestsuite.harvester.heartbeatInterval": 1,
    "harvestsuite.harvester.uploadRetryDelay": 1,
    "harvestsuite.queue.heartbeat": 5,
    "harvestsuite.queue.reconnectMaxDelay": 1,
}
WEBUI_SETS: dict[str, object] = {
    "harvestsuite.scheduler.lostAfterHeartbeats": 10,
}


def environment_variable(key: str) -> str:
    """The ``HARVESTSUITE__…`` variable that overrides the dotted settings ``key`` (harvestdef/settings.py)."""
    return "HARVESTSUITE__" + key.replace(".", "__").upper()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def harvestsuite_command() -> list[str]:
    """The installed console script, as the systemd units run it."""
    script = Path(sys.executable).parent / "harvestsuite"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "harvestdef"]


class RoleProcess(ControllerProcess):
    """One role (``harvestsuite --config FILE --set … ARGS``) as a process of its own, its output in a file."""

    def __init__(self, name: str, config: Path, args: list[str], sets: dict[str, object],
                 environ: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self.expected_exit = False
        command = [*harvestsuite_command(), "--config", str(config), "-v"]
        for key, value in sets.items():
            command += ["--set", f"{key}={value}"]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen([*command, *args], cwd=log_dir, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, env=environ)

    def has_died(self) -> bool:
        return self.process.poll() is not None and not self.expected_exit

    def tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines, without the effective settings every process logs at start."""
        kept = [line for line in self.text().splitlines() if "harvestdef.settings: setting " not in line]
        return "\n".join(kept[-lines:])


class ApiError(AssertionError):
    pass


class Deployment:
    """The running installation: its processes, its directories and a JSON API client with an admin token."""

    def __init__(self, tmp: Path, database_url: str, site: TestSite) -> None:
        self.tmp = tmp
        self.site = site
        self.environment = f"E2E{uuid.uuid4().hex[:10]}"
        self.archive = tmp / "archive"
        self.etc = tmp / "etc"
        self.logs = tmp / "logs"
        for directory in (self.archive, self.etc, self.logs):
            directory.mkdir()
        for role in ("scheduler", "harvester", "webui"):
            shutil.copy(DEPLOY / f"{role}.toml", self.etc / f"{role}.toml")
        self.hosts_file = site.write_hosts_file(tmp / "hosts")
        self.server_dirs = {name: tmp / "harvester" / name for name in HARVESTER_CHANNELS}
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.processes: dict[str, RoleProcess] = {}
        self.token = ""
        # What every role's environment file would say: the broker, the queue prefix, the store, and no mail.
        common = {"harvestsuite.queue.url": AMQP_URL, "common.environmentName": self.environment,
                  "harvestsuite.archive.root": str(self.archive), "common.mail.server": ""}
        inherited = {name: value for name, value in os.environ.items()
                     if not name.upper().startswith("HARVESTSUITE_")}
        base = {**inherited, "PYTHONUNBUFFERED": "1",
                **{environment_variable(key): value for key, value in common.items()}}
        with_database = {**base, environment_variable("harvestsuite.database.url"): database_url}
        # Harvester nodes never get the database: their environment names none.
        self.environ = {"scheduler": with_database, "webui": with_database, "harvester": base}

    # ------------------------------------------------------------------ commands and processes
    def command(self, role: str, *args: str, stdin: str | None = None) -> str:
        """Run a one-off ``harvestsuite`` command with ``role``'s settings; its stdout."""
        result = subprocess.run([*harvestsuite_command(), "--config", str(self.etc / f"{role}.toml"), *args],
                                input=stdin, capture_output=True, text=True, env=self.environ[role],
                                cwd=self.logs, timeout=120)
        assert result.returncode == 0, f"harvestsuite {' '.join(args)} exited {result.returncode}:\n" \
                                       f"{result.stdout}\n{result.stderr}"
        return result.stdout

    def start(self, name: str, role: str, args: list[str], sets: dict[str, object],
              environ: dict[str, str] | None = None) -> RoleProcess:
        process = RoleProcess(name, self.etc / f"{role}.toml", args, sets, {**self.environ[role], **(environ or {})},
                              self.logs)
        self.processes[name] = process
        return process

    def start_all(self) -> None:
        self.start("scheduler", "scheduler", ["scheduler", "run"], SCHEDULER_SETS)
        for name, channel in HARVESTER_CHANNELS.items():
            # as harvestsuite-harvester@NAME.service: its own serverDir and channel from its environment
            self.start(f"harvester-{name}", "harvester", ["harvester", "run"], {
                **HARVESTER_SETS, "harvestsuite.crawler.hostsFile": self.hosts_file,
                "harvester.harvesting.heritrix.adminPassword": uuid.uuid4().hex},
                environ={environment_variable("harvester.harvesting.serverdir"): str(self.server_dirs[name]),
                         environment_variable("harvester.harvesting.channel"): channel})
        self.start("webui", "webui", ["webui", "run", "--host", "127.0.0.1", "--port", str(self.port)], WEBUI_SETS)

    def stop(self, process: RoleProcess, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, as systemd's KillSignal; SIGKILL if it is still there after ``timeout``."""
        return process.stop(timeout=timeout)

    def stop_all(self) -> None:
        # harvesters first: their last reports still reach a running scheduler
        for name in sorted(self.processes, key=lambda n: (not n.startswith("harvester"), n)):
            self.stop(self.processes[name])

    def log_tails(self, lines: int = 60) -> str:
        return "\n".join(f"----- {name} ({self.logs / (name + '.log')}) -----\n{process.tail(lines)}"
                         for name, process in self.processes.items())

    def queue_names(self) -> list[str]:
        names = QueueNames(self.environment)
        controllers = [names.controller(path.read_text(encoding="utf-8").strip())
                       for path in (self.tmp / "harvester").glob("*/controller-id")]
        return [names.scheduler, names.monitor, names.dead_letter,
                *(names.jobs(channel) for channel in HARVESTER_CHANNELS.values()), *controllers]

    # ------------------------------------------------------------------ waiting
    def wait_for(self, what: str, probe: Callable[[], _T | None], timeout: float) -> _T:
        """``probe()``'s first true answer, polled while every process lives; fails with the logs otherwise."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            died = [process for process in self.processes.values() if process.has_died()]
            if died:
                raise AssertionError(f"{died[0].name} exited with {died[0].process.returncode} while waiting for "
                                     f"{what}\n{self.log_tails()}")
            try:
                answer = probe()
            except (OSError, ApiError) as exc:  # the web UI still starting, say
                last_error, answer = exc, None
            if answer:
                return answer
            time.sleep(0.5)
        raise AssertionError(f"no {what} within {timeout} s (last error: {last_error})\n{self.log_tails()}")

    # ------------------------------------------------------------------ the JSON API
    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base_url}/api/v1{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, expect: int = 200) -> Any:
        status, answer = self.call(method, path, body)
        if status != expect:
            raise ApiError(f"{method} {path}: {status} (expected {expect}): {answer}")
        return answer

    def jobs(self, harvest: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/jobs?harvest={harvest}&limit=1000")["items"]

    def wait_for_run(self, harvest: str, harvest_num: int, timeout: float) -> list[dict[str, Any]]:
        """The jobs of run ``harvest_num`` of ``harvest`` once every one of them is DONE or FAILED."""
        def finished() -> list[dict[str, Any]] | None:
            jobs = [job for job in self.jobs(harvest) if job["harvest_num"] == harvest_num]
            return jobs if jobs and all(job["status"] in ("DONE", "FAILED") for job in jobs) else None
        return sorted(self.wait_for(f"finished jobs of {harvest} run {harvest_num}", finished, timeout),
                      key=lambda job: job["job_id"])


@pytest.fixture(scope="module")
def e2e_site() -> Iterator[TestSite]:
    with TestSite(hosts=SITE_HOSTS) as site:
        yield site


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, postgresql_database: str,
               e2e_site: TestSite) -> Iterator[Deployment]:
    """The installation, running; stopped (SIGTERM, then SIGKILL) and its queues deleted afterwards."""
    require_rabbitmq()
    system = Deployment(tmp_path_factory.mktemp("e2e"), postgresql_database, e2e_site)
    try:
        system.command("scheduler", "db", "init")
        system.command("webui", "users", "add", "e2e-admin", "--role", "admin", stdin="e2e password\n")
        system.token = system.command("webui", "users", "token", "e2e-admin").strip()
        system.start_all()
        system.wait_for("the web UI", lambda: system.call("GET", "/openapi.json")[0] == 200, START_TIMEOUT)
        yield system
    finally:
        system.stop_all()
        delete_queues(system.queue_names())


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A failed test shows the tail of every process's log, since the failure usually happened there."""
    if call.excinfo is None or call.when != "call":
        return
    system = getattr(item, "funcargs", {}).get("deployment")
    if isinstance(system, Deployment):
        item.add_report_section("call", "harvestsuite processes", system.log_tails(200))
